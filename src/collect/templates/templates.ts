// GET /templates (and /templates/{id} with poll.templateDetails): cluster-wide (shard 0).
import type { TickCollector } from "../collector.js";
import { oneRequest, withDetails } from "../details.js";
import { templateFamilies } from "./template-families.js";

export const templatesCollector: TickCollector<"templates"> = {
  name: "templates",
  optional: true,
  runs: (where) => where.clusterWide,
  read: ({ reader, poll }) =>
    withDetails(
      () => oneRequest(reader.listTemplates()),
      (id) => reader.getTemplate(id),
      poll.templateDetails,
    ),
  families: templateFamilies,
};
