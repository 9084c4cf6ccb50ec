// Templates: E2B's paged GET /v2/templates, or GET /templates where it is not served (older E2B
// installs, the sandboxapi flavor: see template-list.ts), and /templates/{id} with
// poll.templateDetails. Cluster-wide (shard 0).
import type { TickCollector } from "../collector.js";
import { withDetails } from "../details.js";
import { templateFamilies } from "./template-families.js";
import { readTemplateList, type TemplateList } from "./template-list.js";

export const templatesCollector: TickCollector<"templates"> = {
  name: "templates",
  optional: true,
  runs: (where) => where.clusterWide,
  read: async ({ reader, clock, poll, flavor }, previous) => {
    const listing = await readTemplateList({
      reader,
      now: clock.now(),
      maxPages: poll.maxPages,
      recheckMs: poll.capabilityRecheckMs,
      before: (previous as TemplateList | undefined)?.listedBy,
      v1Only: flavor === "sandboxapi",
    });
    const { value, requests } = await withDetails(
      async () => listing,
      (id) => reader.getTemplate(id),
      poll.templateDetails,
    );
    // Merged with their details the records are new: the route that listed them stays with them.
    return { value: Object.assign(value, { listedBy: listing.value.listedBy }), requests };
  },
  families: templateFamilies,
};
