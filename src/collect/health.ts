// GET /health: read on shard 0, and on every shard where the policy runs (it acts only while up).
import { HEALTH_STATUS, healthFamilies, PLATFORM_UP } from "./cluster-families.js";
import type { TickCollector } from "./collector.js";

export const healthCollector: TickCollector<"health"> = {
  name: "health",
  scope: "cluster",
  optional: true,
  runs: (where) => where.clusterWide || where.readHealth,
  read: async ({ reader }) => ({ value: await reader.health(), requests: 1 }),
  families: healthFamilies,
  declares: [PLATFORM_UP, HEALTH_STATUS],
};
