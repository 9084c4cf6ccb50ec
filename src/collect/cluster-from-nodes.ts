// Cluster capacity summed over GET /nodes, for platforms without /cluster/overview (E2B): the
// overview's families under the same names, so dashboards and the capacity rules need one query.

import { fieldMetrics } from "../metrics/exposition/naming.js";
import { Family } from "../metrics/exposition/text.js";
import type { PlatformNode } from "../platform/types.js";

/** Where every derived family comes from, for its HELP. */
const SOURCE =
  "Derived from GET /nodes because the platform serves no GET /cluster/overview. Cached from the last successful poll of GET /nodes.";

/**
 * Cluster family suffix -> the node families (metric suffixes) summed into it. `sandboxes` on a
 * node counts its running sandboxes; a paused one holds no node, so it is in neither sum.
 */
const SUMS: ReadonlyArray<{ suffix: string; from: readonly string[]; what: string }> = [
  { suffix: "cpus", from: ["cpus"], what: "vCPUs of every node" },
  { suffix: "cpu_allocated", from: ["allocated_cpu"], what: "vCPUs allocated to sandboxes" },
  {
    suffix: "memory_total_bytes",
    from: ["memory_total_bytes"],
    what: "Memory of every node in bytes",
  },
  {
    suffix: "memory_allocated_bytes",
    from: ["allocated_memory_bytes"],
    what: "Memory allocated to sandboxes in bytes",
  },
  { suffix: "max_sandboxes", from: ["max_sandboxes"], what: "Sandbox limit of every node" },
  { suffix: "running_sandboxes", from: ["sandboxes"], what: "Sandboxes running on the nodes" },
  {
    suffix: "sandboxes",
    from: ["sandboxes", "sandbox_starting"],
    what: "Sandboxes placed on the nodes (running and starting; paused ones hold no node)",
  },
];

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
  const family = (suffix: string, what: string, value: number): Family =>
    new Family(`${ns}_cluster_${suffix}`, "gauge", `${what}. ${SOURCE}`).add("", value);
  const out = [
    family("nodes", "Nodes listed", nodes.length),
    family(
      "ready_nodes",
      "Nodes whose status is ready",
      nodes.filter((n) => n.status === "ready").length,
    ),
  ];
  for (const { suffix, from, what } of SUMS) {
    const parts = from.filter((f) => totals.has(f));
    // A sum of sandboxes needs its first part (the running count); starting alone is not it.
    if (parts[0] !== from[0]) continue;
    out.push(
      family(
        suffix,
        what,
        parts.reduce((sum, f) => sum + (totals.get(f) ?? 0), 0),
      ),
    );
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1));
}
