// Cluster capacity summed over GET /nodes, for platforms without /cluster/overview (E2B): the
// overview's families under the same names, so dashboards and the capacity rules need one query.

import { type FamilyDescriptor, family, gauge } from "../exposition/descriptor.js";
import { fieldMetrics } from "../exposition/naming.js";
import type { Family } from "../exposition/text.js";
import type { PlatformNode } from "../platform/types.js";

/** Where every derived family comes from, for its HELP. */
const SOURCE =
  "Derived from GET /nodes because the platform serves no GET /cluster/overview. Cached from the last successful poll of GET /nodes.";

/** A cluster family from the nodes: the overview's family of that name, another HELP. */
const derived = (suffix: string, what: string): FamilyDescriptor<"gauge"> =>
  gauge(`cluster_${suffix}`, `${what}. ${SOURCE}`, [], { variant: true });

const NODES = derived("nodes", "Nodes listed");
const READY_NODES = derived("ready_nodes", "Nodes whose status is ready");

/**
 * Cluster family -> the node families (metric suffixes) summed into it. `sandboxes` on a node
 * counts its running sandboxes; a paused one holds no node, so it is in neither sum.
 */
const SUMS: ReadonlyArray<{ d: FamilyDescriptor<"gauge">; from: readonly string[] }> = [
  { d: derived("cpus", "vCPUs of every node"), from: ["cpus"] },
  { d: derived("cpu_allocated", "vCPUs allocated to sandboxes"), from: ["allocated_cpu"] },
  {
    d: derived("memory_total_bytes", "Memory of every node in bytes"),
    from: ["memory_total_bytes"],
  },
  {
    d: derived("memory_allocated_bytes", "Memory allocated to sandboxes in bytes"),
    from: ["allocated_memory_bytes"],
  },
  { d: derived("max_sandboxes", "Sandbox limit of every node"), from: ["max_sandboxes"] },
  { d: derived("running_sandboxes", "Sandboxes running on the nodes"), from: ["sandboxes"] },
  {
    d: derived(
      "sandboxes",
      "Sandboxes placed on the nodes (running and starting; paused ones hold no node)",
    ),
    from: ["sandboxes", "sandbox_starting"],
  },
];

/** The overview's families as E2B's nodes give them (variants of the overview's field families). */
export const CLUSTER_FROM_NODES_FAMILIES = [NODES, READY_NODES, ...SUMS.map((s) => s.d)];

/** The overview's node counts and capacity sums, from the nodes; a sum no node reports is left out. */
export function clusterFromNodes(ns: string, nodes: readonly PlatformNode[]): Family[] {
  const { metrics } = fieldMetrics(
    nodes.flatMap((n) => Object.keys(n.numeric)),
    new Set(),
  );
  /** Node metric suffix -> the sum of its values over the nodes that report it. */
  const totals = new Map<string, number>();
  for (const [field, m] of metrics)
    for (const n of nodes) {
      const v = n.numeric[field];
      if (v !== undefined) totals.set(m.suffix, (totals.get(m.suffix) ?? 0) + (v * m.mul) / m.div);
    }
  const out: Family[] = [
    family(ns, NODES).add("", nodes.length),
    family(ns, READY_NODES).add("", nodes.filter((n) => n.status === "ready").length),
  ];
  for (const { d, from } of SUMS) {
    const parts = from.filter((f) => totals.has(f));
    // A sum of sandboxes needs its first part (the running count); starting alone is not it.
    if (parts[0] !== from[0]) continue;
    out.push(
      family(ns, d).add(
        "",
        parts.reduce((sum, f) => sum + (totals.get(f) ?? 0), 0),
      ),
    );
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}
