// The template list: E2B's paged GET /v2/templates (GET /templates is deprecated, e2b-dev/infra#3059),
// 100 a page, following the X-Next-Token header. A platform that answers the first page 404 or 405
// (an older E2B install) is read with GET /templates, and asked for v2 again after
// poll.capabilityRecheckMs. The sandboxapi flavor serves no v2 (platform-api.md): never asked.
// v2 is read in the background of the request budget, poll.listPagesPerTick pages a tick at most.
import { deferList, normalizeTemplate } from "../../platform/normalize/normalize.js";
import type { Template } from "../../platform/types.js";
import {
  IncompleteReadError,
  type PlatformReader,
  type Reading,
  routeMissing,
} from "../collector.js";
import { type ListPass, nextTokenOf, type PageBounds, type PassRead, readPass } from "../paging.js";

/** The paged list and its endpoint (the request metrics' label). */
export const V2_TEMPLATES = "/v2/templates";
/** E2B's largest page of /v2/templates (also its default): 5,000 templates are 50 requests. */
export const V2_PAGE_LIMIT = 100;

/** Which route read a list; after a fallback, when v2 is asked again (epoch ms). */
export type ListedBy = { route: "v2" } | { route: "v1"; v2RetryAt: number };

/** A reading of the list, which remembers the route that read it and a pass still going on. */
export type TemplateList = readonly Template[] & {
  readonly listedBy?: ListedBy;
  /** False while no pass over v2 has reached its end: the list is what was read so far. */
  readonly complete?: boolean;
  /** A v2 pass that goes on next tick (it stopped at its page or time limit). */
  readonly pass?: ListPass<Template[]>;
};

/** What a read of the list needs. */
export interface TemplateListRead {
  reader: PlatformReader;
  now: number;
  /** Pages and time of one read (poll.listPagesPerTick, poll.listMaxMs, poll.maxPages a pass). */
  bounds: PageBounds;
  /** How long after a fallback v2 is asked again (poll.capabilityRecheckMs). */
  recheckMs: number;
  /** The previous reading, if any: its route, its pass, the last complete list. */
  previous?: TemplateList | undefined;
  /** True where the platform's kind serves no v2 (the sandboxapi flavor): GET /templates only. */
  v1Only?: boolean;
}

/**
 * Reads the templates: v2 page by page (a long list over several ticks: until a pass ends the
 * last complete list is kept), else (404/405 on its first page) the one v1 list. A v2 pass that
 * loops fails the read, naming why, with the last complete list kept (else what it read).
 */
export async function readTemplateList(r: TemplateListRead): Promise<Reading<TemplateList>> {
  const { reader, now, previous } = r;
  const before = previous?.listedBy;
  const retryAt = before?.route === "v1" ? before.v2RetryAt : undefined;
  const legacy = r.v1Only === true || (retryAt !== undefined && now < retryAt);
  let asked = 0;
  if (!legacy) {
    try {
      const got = await readPass<Template, Template[]>({
        list: V2_TEMPLATES,
        bounds: r.bounds,
        previous: previous?.pass,
        start: (from) => (from ? [...from] : []),
        add: (acc, t) => acc.push(t),
        fetchPage: (token) => {
          asked++;
          return page(reader, token);
        },
      });
      return published(got, previous);
    } catch (err) {
      if (asked !== 1 || previous?.pass !== undefined || !routeMissing(err)) throw err;
    }
  }
  const v1: ListedBy = {
    route: "v1",
    v2RetryAt: legacy && retryAt !== undefined ? retryAt : now + r.recheckMs,
  };
  return { value: listed(await reader.listTemplates(), v1), requests: asked + 1 };
}

/** What a v2 read publishes: the whole list, else the last complete one (else what was read). */
function published(got: PassRead<Template[]>, previous?: TemplateList): Reading<TemplateList> {
  const lists = [got.report];
  const requests = got.report.pages;
  if (got.complete) return { value: listed(got.acc, { route: "v2" }), requests, lists };
  const last = previous?.complete === false ? undefined : previous;
  const kept = last ?? listed(got.acc, { route: "v2" }, false);
  const value = Object.assign([...kept], {
    listedBy: kept.listedBy ?? { route: "v2" },
    complete: last !== undefined,
    ...(got.pass ? { pass: got.pass } : {}),
  }) as TemplateList;
  if (got.broken) throw new IncompleteReadError(got.broken, { value, requests, lists });
  return { value, requests, lists };
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
    { background: true },
  );
  const nextToken = nextTokenOf(reply.headers);
  const { size, items } = reply.body;
  return { size, items: () => items, ...(nextToken ? { nextToken } : {}) };
}

function listed(items: readonly Template[], by: ListedBy, complete = true): TemplateList {
  return Object.assign(items, { listedBy: by, complete });
}
