// The families of the cluster collectors: /health, /cluster/overview and /nodes (shard 0 only).

import { extraLabelNames, fieldMetrics } from "../metrics/exposition/naming.js";
import {
  cached,
  numericFamilies,
  StatusSet,
  sorted,
  uniqueById,
} from "../metrics/exposition/record-families.js";
import { StateMemory } from "../metrics/exposition/state-memory.js";
import { Family, labels } from "../metrics/exposition/text.js";
import type { ClusterOverview, Health, PlatformNode } from "../platform/types.js";
import { clusterFromNodes } from "./cluster-from-nodes.js";
import type { FamiliesContext, FamilyUpdater } from "./collector.js";

const NODE_RESERVED = new Set(["status", "info"]);

/** platform_up, and the health status as a state-set. */
export function healthFamilies({ ns }: FamiliesContext): FamilyUpdater<Health> {
  const memory = new StateMemory();
  return (h, { guard }) => {
    const up = new Family(
      `${ns}_platform_up`,
      "gauge",
      `1 when the platform answered healthy, else 0. ${cached("/health")}`,
    ).add("", h.up ? 1 : 0);
    if (h.status === undefined) return [up];
    const set = new Family(
      `${ns}_platform_health_status`,
      "gauge",
      `Health status as a state-set: 1 for the current value, 0 for others seen. ${cached("/health")}`,
    );
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
      new Family(
        `${ns}_cluster_${m.suffix}`,
        "gauge",
        `Field ${field} of the cluster overview. ${cached("/cluster/overview")}`,
      ).add("", ((o.numeric[field] as number) * m.mul) / m.div),
    );
  };
}

/** Node status, numeric fields and info; the cluster's capacity from them when no overview. */
export function nodeFamilies({ ns }: FamiliesContext): FamilyUpdater<readonly PlatformNode[]> {
  const status = new StatusSet(ns, "node", "/nodes");
  return (list, { snapshot, guard, skipped }) => {
    const nodes = uniqueById(list);
    const out: Family[] = [];
    // No overview (E2B serves none, or it never answered): its capacity families from the nodes.
    if (!snapshot.overview) out.push(...clusterFromNodes(ns, nodes));
    out.push(status.render(nodes, guard));
    out.push(...numericFamilies(ns, "node", nodes, NODE_RESERVED, "/nodes", skipped, guard));
    const info = new Family(
      `${ns}_node_info`,
      "gauge",
      `String fields of the node as labels, value 1. ${cached("/nodes")}`,
    );
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
