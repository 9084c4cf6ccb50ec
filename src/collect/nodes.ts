// GET /nodes (and /nodes/{id} with poll.nodeDetails): cluster-wide (shard 0); E2B's are for admins.
import { NODE_FIELD, NODE_INFO, NODE_STATUS, nodeFamilies } from "./cluster-families.js";
import { CLUSTER_FROM_NODES_FAMILIES } from "./cluster-from-nodes.js";
import type { TickCollector } from "./collector.js";
import { oneRequest, withDetails } from "./details.js";

export const nodesCollector: TickCollector<"nodes"> = {
  name: "nodes",
  scope: "cluster",
  optional: true,
  runs: (where) => where.clusterWide,
  read: ({ reader, poll }) =>
    withDetails(
      () => oneRequest(reader.listNodes()),
      (id) => reader.getNode(id),
      poll.nodeDetails,
    ),
  families: nodeFamilies,
  declares: [NODE_STATUS, NODE_FIELD, NODE_INFO, ...CLUSTER_FROM_NODES_FAMILIES],
};
