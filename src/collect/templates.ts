// GET /templates (and /templates/{id} with poll.templateDetails): cluster-wide (shard 0).
import type { TickCollector } from "./collector.js";
import { withDetails } from "./details.js";

export const templatesCollector: TickCollector<"templates"> = {
  name: "templates",
  optional: true,
  runs: (where) => where.clusterWide,
  read: ({ reader, templateDetails }) =>
    withDetails(
      () => reader.listTemplates(),
      (id) => reader.getTemplate(id),
      templateDetails,
    ),
};
