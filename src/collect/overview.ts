// GET /cluster/overview: cluster-wide (shard 0); E2B serves none, which capability learning finds.
import { CLUSTER_FIELD, overviewFamilies } from "./cluster-families.js";
import type { TickCollector } from "./collector.js";

export const overviewCollector: TickCollector<"overview"> = {
  name: "overview",
  scope: "cluster",
  optional: true,
  runs: (where) => where.clusterWide,
  read: async ({ reader }) => ({ value: await reader.clusterOverview(), requests: 1 }),
  families: overviewFamilies,
  declares: [CLUSTER_FIELD],
};
