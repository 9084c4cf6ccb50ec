// The families of the cluster collectors: /health, /cluster/overview and /nodes (shard 0 only).

import {
  E2B_FLAVOR,
  family,
  fieldFamily,
  gauge,
  setting,
  TEAM_LABEL,
} from "../exposition/descriptor.js";
import { extraLabelNames, fieldMetrics } from "../exposition/naming.js";
import {
  cached,
  numericFamilies,
  StatusSet,
  sorted,
  uniqueById,
} from "../exposition/record-families.js";
import { StateMemory } from "../exposition/state-memory.js";
import { type Family, labels } from "../exposition/text.js";
import type { ClusterOverview, Health, PlatformNode } from "../platform/types.js";
import { clusterFromNodes } from "./cluster-from-nodes.js";
import type { FamiliesContext, FamilyUpdater } from "./collector.js";

const NODE_RESERVED = new Set(["status", "info"]);

export const PLATFORM_UP = gauge(
  "platform_up",
  `1 when the platform answered healthy, else 0. ${cached("/health")}`,
);
export const HEALTH_STATUS = gauge(
  "platform_health_status",
  `Health status as a state-set: 1 for the current value, 0 for others seen. ${cached("/health")}`,
  ["status"],
  { flavor: "sandboxapi" },
);
/** A family per numeric field of the overview; the fields are the simulator's (sandboxapi). */
export const CLUSTER_FIELD = gauge(
  "cluster_{metric}",
  `Field {field} of the cluster overview. ${cached("/cluster/overview")}`,
  [],
  {
    fields: [
      { field: "cpu_allocated" },
      { field: "cpu_count" },
      { field: "max_sandboxes", flavor: "sandboxapi" },
      { field: "memory_allocated_bytes" },
      { field: "memory_total_bytes" },
      { field: "node_count" },
      { field: "paused_sandbox_count", flavor: "sandboxapi" },
      { field: "ready_node_count" },
      { field: "running_sandbox_count" },
      { field: "sandbox_count" },
      { field: "template_count", labels: [TEAM_LABEL] },
    ],
  },
);
export const NODE_STATUS = gauge(
  "node_status",
  `Status of the node as a state-set: 1 for the current value, 0 for others seen. ${cached("/nodes")}`,
  ["node", "status"],
);
/** A family per numeric field of the nodes; the fields are the simulator's records'. */
export const NODE_FIELD = gauge(
  "node_{metric}",
  `Field {field} of the node. ${cached("/nodes")}`,
  ["node"],
  {
    fields: [
      { field: "allocated_cpu" },
      { field: "allocated_memory_bytes" },
      { field: "cpu_count" },
      { field: "cpu_percent", flavor: "e2b" },
      { field: "create_fails" },
      { field: "create_successes" },
      { field: "huge_page_size_bytes", flavor: "e2b" },
      { field: "huge_pages_reserved", flavor: "e2b" },
      { field: "huge_pages_total", flavor: "e2b" },
      { field: "huge_pages_used", flavor: "e2b" },
      { field: "max_sandboxes", flavor: "sandboxapi" },
      { field: "memory_total_bytes" },
      { field: "memory_used_bytes", flavor: "e2b" },
      { field: "sandbox_count" },
      { field: "sandbox_starting_count" },
      { field: "status_changed_at_timestamp_seconds", flavor: "e2b" },
    ],
  },
);
/** The node's string fields as labels: the ones the reference lists are the simulator's. */
export const NODE_INFO = gauge(
  "node_info",
  `String fields of the node as labels, value 1. ${cached("/nodes")}`,
  [
    "node",
    "cluster_id",
    "commit",
    "version",
    ...[
      "machine_info_cpu_architecture",
      "machine_info_cpu_family",
      "machine_info_cpu_model",
      "machine_info_cpu_model_name",
    ].map((name) => ({ name, with: setting("poll.nodeDetails") })),
    { name: "service_instance_id", with: E2B_FLAVOR },
  ],
);

/** platform_up, and the health status as a state-set. */
export function healthFamilies({ ns }: FamiliesContext): FamilyUpdater<Health> {
  const memory = new StateMemory();
  return (h, { guard }) => {
    const up = family(ns, PLATFORM_UP).add("", h.up ? 1 : 0);
    if (h.status === undefined) return [up];
    const set = family(ns, HEALTH_STATUS);
    for (const st of memory.observe([h.status]))
      set.add(labels([["status", st]], guard), st === h.status ? 1 : 0);
    return [up, set];
  };
}

/** A family per numeric field of the overview. */
export function overviewFamilies({ ns }: FamiliesContext): FamilyUpdater<ClusterOverview> {
  return (o, { skipped }) => {
    const { metrics, skipped: lost } = fieldMetrics(Object.keys(o.numeric), new Set());
    for (const f of lost) skipped(`/cluster/overview ${f}`);
    return sorted(metrics).map(([field, m]) =>
      fieldFamily(ns, CLUSTER_FIELD, field, m.suffix).add(
        "",
        ((o.numeric[field] as number) * m.mul) / m.div,
      ),
    );
  };
}

/** Node status, numeric fields and info; the cluster's capacity from them when no overview. */
export function nodeFamilies({ ns }: FamiliesContext): FamilyUpdater<readonly PlatformNode[]> {
  const status = new StatusSet(ns, NODE_STATUS);
  return (list, { snapshot, guard, skipped }) => {
    const nodes = uniqueById(list);
    const out: Family[] = [];
    // No overview (E2B serves none, or it never answered): its capacity families from the nodes.
    if (!snapshot.overview) out.push(...clusterFromNodes(ns, nodes));
    out.push(status.render(nodes, guard));
    out.push(...numericFamilies(ns, NODE_FIELD, nodes, NODE_RESERVED, "/nodes", skipped, guard));
    const info = family(ns, NODE_INFO);
    for (const n of nodes) {
      const keys = Object.keys(n.info).sort();
      const { pairs } = extraLabelNames(keys, ["node"], "info_");
      const pairsOut: Array<[string, string]> = [["node", n.id]];
      for (const [key, name] of pairs) pairsOut.push([name, n.info[key] as string]);
      info.add(labels(pairsOut, guard), 1);
    }
    out.push(info);
    return out;
  };
}
