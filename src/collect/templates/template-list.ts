// The template list: E2B's paged GET /v2/templates (GET /templates is deprecated, e2b-dev/infra#3059),
// 100 a page, following the X-Next-Token header. A platform that answers the first page 404 or 405
// (an older E2B install) is read with GET /templates, and asked for v2 again after
// poll.capabilityRecheckMs. The sandboxapi flavor serves no v2 (platform-api.md): never asked.
import { deferList, normalizeTemplate } from "../../platform/normalize/normalize.js";
import type { Template } from "../../platform/types.js";
import { type PlatformReader, type Reading, routeMissing } from "../collector.js";
import { walkPages } from "../paging.js";

/** The paged list and its endpoint (the request metrics' label). */
export const V2_TEMPLATES = "/v2/templates";
/** E2B's largest page of /v2/templates (also its default): 5,000 templates are 50 requests. */
export const V2_PAGE_LIMIT = 100;

/** Which route read a list; after a fallback, when v2 is asked again (epoch ms). */
export type ListedBy = { route: "v2" } | { route: "v1"; v2RetryAt: number };

/** A reading of the list, which remembers the route that read it. */
export type TemplateList = readonly Template[] & { readonly listedBy?: ListedBy };

/** What a read of the list needs. */
export interface TemplateListRead {
  reader: PlatformReader;
  now: number;
  /** Pages of one walk at most (poll.maxPages). */
  maxPages: number;
  /** How long after a fallback v2 is asked again (poll.capabilityRecheckMs). */
  recheckMs: number;
  /** The route of the previous reading, if any. */
  before?: ListedBy | undefined;
  /** True where the platform's kind serves no v2 (the sandboxapi flavor): GET /templates only. */
  v1Only?: boolean;
}

/** Reads every template: v2 page by page, else (404/405 on its first page) the one v1 list. */
export async function readTemplateList(r: TemplateListRead): Promise<Reading<TemplateList>> {
  const { reader, now } = r;
  const retryAt = r.before?.route === "v1" ? r.before.v2RetryAt : undefined;
  const legacy = r.v1Only === true || (retryAt !== undefined && now < retryAt);
  let asked = 0;
  if (!legacy) {
    try {
      const { items, pages } = await walkPages((token) => {
        asked++;
        return page(reader, token);
      }, r.maxPages);
      return { value: listed(items, { route: "v2" }), requests: pages };
    } catch (err) {
      if (asked !== 1 || !routeMissing(err)) throw err;
    }
  }
  const v1: ListedBy = {
    route: "v1",
    v2RetryAt: legacy && retryAt !== undefined ? retryAt : now + r.recheckMs,
  };
  return { value: listed(await reader.listTemplates(), v1), requests: asked + 1 };
}

/** One page of /v2/templates, its records normalized as GET /templates' are. */
async function page(reader: PlatformReader, token: string | undefined) {
  const n = reader.normalizer;
  const reply = await reader.getJsonReply(
    V2_TEMPLATES,
    V2_TEMPLATES,
    { limit: V2_PAGE_LIMIT, nextToken: token },
    // Parsed inside the client's decode: a body that is no list is a bad_body, named.
    (body) => {
      const p = deferList(n, body, {}, (raw, path) => normalizeTemplate(n, raw, path));
      return { size: p.size, items: p.items() };
    },
  );
  const next = reply.headers["x-next-token"];
  const nextToken = Array.isArray(next) ? next[0] : next;
  const { size, items } = reply.body;
  return { size, items: () => items, ...(nextToken ? { nextToken } : {}) };
}

function listed(items: readonly Template[], by: ListedBy): TemplateList {
  return Object.assign(items, { listedBy: by });
}
