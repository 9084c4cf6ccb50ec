// Templates: E2B's paged GET /v2/templates, or GET /templates where it is not served (older E2B
// installs, the sandboxapi flavor: see template-list.ts), and /templates/{id} with
// poll.templateDetails. Cluster-wide (shard 0).
import type { TickCollector } from "../collector.js";
import { withDetails } from "../details.js";
import { tickBounds } from "../paging.js";
import { TEMPLATE_FAMILIES, templateFamilies } from "./template-families.js";
import { readTemplateList, type TemplateList } from "./template-list.js";

export const templatesCollector: TickCollector<"templates"> = {
  name: "templates",
  optional: true,
  runs: (where) => where.clusterWide,
  read: async (ctx, previous) => {
    const { reader, clock, poll, flavor } = ctx;
    const listing = await readTemplateList({
      reader,
      now: clock.now(),
      bounds: tickBounds({ ...ctx, now: () => clock.now() }),
      recheckMs: poll.capabilityRecheckMs,
      previous: previous as TemplateList | undefined,
      v1Only: flavor === "sandboxapi",
    });
    const { value, requests } = await withDetails(
      async () => listing,
      (id) => reader.getTemplate(id),
      poll.templateDetails,
    );
    // Merged with their details the records are new: the route and the pass stay with them.
    const { listedBy, complete, pass } = listing.value;
    return {
      value: Object.assign(value, { listedBy, complete, ...(pass ? { pass } : {}) }),
      requests,
      ...(listing.lists ? { lists: listing.lists } : {}),
    };
  },
  families: templateFamilies,
  declares: TEMPLATE_FAMILIES,
};
