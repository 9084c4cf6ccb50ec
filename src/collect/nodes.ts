// GET /nodes (and /nodes/{id} with poll.nodeDetails): cluster-wide (shard 0); E2B's are for admins.
import type { TickCollector } from "./collector.js";
import { withDetails } from "./details.js";

export const nodesCollector: TickCollector<"nodes"> = {
  name: "nodes",
  optional: true,
  runs: (where) => where.clusterWide,
  read: ({ reader, nodeDetails }) =>
    withDetails(
      () => reader.listNodes(),
      (id) => reader.getNode(id),
      nodeDetails,
    ),
};
