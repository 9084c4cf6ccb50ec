// GET /v2/sandboxes: filtered, token-paged walk in id order (default) or newest first (E2B's).
import type { ApiHandler } from "./context.js";
import { sendError, sendJson } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { renderSandbox } from "./render.js";
import { type SimState, upperBound } from "./state.js";

/** A parsed list request. */
export interface ListQuery {
  /** Allowed states; empty means any. */
  states: ReadonlySet<string>;
  /** Metadata pairs that must all match. */
  metadata: ReadonlyArray<readonly [string, string]>;
  /** Continue strictly after this position: an id, or `startedAt~id` in start order. */
  after: string | undefined;
  limit: number;
}

/** One page: the sandboxes and the id to continue after, if any match remains. */
export interface ListPage {
  items: SimSandbox[];
  nextAfter: string | undefined;
}

/** Encodes a page position as an opaque token (the last id, base64url). */
export function encodeToken(id: string): string {
  return Buffer.from(id, "utf8").toString("base64url");
}

/** Decodes a token; undefined when it is not one of ours. */
export function decodeToken(token: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  const id = Buffer.from(token, "base64url").toString("utf8");
  return /^[\x21-\x7e]+$/.test(id) ? id : undefined;
}

function matches(s: SimSandbox, q: ListQuery): boolean {
  if (q.states.size > 0 && !q.states.has(s.state)) return false;
  for (const [k, v] of q.metadata) if (s.metadata[k] !== v) return false;
  return true;
}

/** The order pages come in: by id, or by start time newest first then id, as E2B pages. */
export type ListOrder = "id" | "started";

/** Walks the index from `after`; stable under inserts and deletes because positions are keys. */
export function listPage(state: SimState, q: ListQuery, order: ListOrder = "id"): ListPage {
  if (order === "started") return startOrderPage(state, q);
  const ids = state.sortedIds();
  const items: SimSandbox[] = [];
  let i = q.after === undefined ? 0 : upperBound(ids, q.after);
  for (; i < ids.length && items.length < q.limit; i++) {
    const s = state.sandboxes.get(ids[i] as string);
    if (s && matches(s, q)) items.push(s);
  }
  // Look ahead for one more match so the last page carries no token.
  for (; i < ids.length; i++) {
    const s = state.sandboxes.get(ids[i] as string);
    if (s && matches(s, q)) return { items, nextAfter: items.at(-1)?.sandboxID };
  }
  return { items, nextAfter: undefined };
}

/** The page after `startedAt~id` in start order (newest first, then id). */
function startOrderPage(state: SimState, q: ListQuery): ListPage {
  const all = state.startOrder();
  let i = 0;
  if (q.after !== undefined) {
    const cut = q.after.indexOf("~");
    const at = Number(q.after.slice(0, cut));
    const id = q.after.slice(cut + 1);
    // First sandbox after the position: started earlier, or at the same time with a greater id.
    let hi = all.length;
    while (i < hi) {
      const mid = (i + hi) >>> 1;
      const s = all[mid] as SimSandbox;
      if (s.startedAt > at || (s.startedAt === at && s.sandboxID <= id)) i = mid + 1;
      else hi = mid;
    }
  }
  const items: SimSandbox[] = [];
  for (; i < all.length && items.length < q.limit; i++) {
    const s = all[i] as SimSandbox;
    if (matches(s, q)) items.push(s);
  }
  const last = items.at(-1);
  for (; i < all.length; i++) {
    if (matches(all[i] as SimSandbox, q))
      return { items, nextAfter: last && `${last.startedAt}~${last.sandboxID}` };
  }
  return { items, nextAfter: undefined };
}

/** The states E2B knows (its SandboxState); it lists both when asked for none (GetV2Sandboxes). */
export const E2B_STATES: ReadonlySet<string> = new Set(["running", "paused"]);

/**
 * Parses the query string; a string is an error message for a 400. E2B (`e2b`) refuses a limit
 * above the cap or a state it does not know, and lists running and paused sandboxes when given no
 * state.
 */
export function parseListQuery(url: URL, pageSizeCap: number, e2b = false): ListQuery | string {
  const states = new Set(
    url.searchParams
      .getAll("state")
      .flatMap((v) => v.split(","))
      .map((v) => v.trim())
      .filter((v) => v !== ""),
  );
  if (e2b) {
    for (const st of states) if (!E2B_STATES.has(st)) return `invalid state '${st}'`;
    if (states.size === 0) for (const st of E2B_STATES) states.add(st);
  }
  // E2B style: metadata="k=v&k2=v2" with each key and value URL-encoded, then the whole encoded
  // once more as the parameter: a second decoding here.
  const metadata = url.searchParams
    .getAll("metadata")
    .flatMap((v) => [...new URLSearchParams(v)])
    .filter(([k]) => k !== "");
  let after: string | undefined;
  const token = url.searchParams.get("nextToken");
  if (token !== null && token !== "") {
    after = decodeToken(token);
    if (after === undefined) return "invalid nextToken";
  }
  let limit = pageSizeCap;
  const rawLimit = url.searchParams.get("limit");
  if (rawLimit !== null) {
    const n = Number(rawLimit);
    if (!Number.isInteger(n) || n < 1) return `invalid limit '${rawLimit}'`;
    if (e2b && n > pageSizeCap) return `limit must be at most ${pageSizeCap}`;
    limit = Math.min(n, pageSizeCap);
  }
  return { states, metadata, after, limit };
}

/** Handler of GET /v2/sandboxes, including the paging faults. */
export const listSandboxes: ApiHandler = (ctx, _req, res, _params, url) => {
  const e2b = ctx.flavor === "e2b";
  const q = parseListQuery(url, ctx.pageSizeCap, e2b);
  if (typeof q === "string") return sendError(res, 400, q);
  // Newest-first positions are `startedAt~id`; an id alone belongs to the other order.
  if (ctx.listOrder === "started" && q.after !== undefined && !/^-?\d+~/.test(q.after))
    return sendError(res, 400, "invalid nextToken");
  const page = listPage(ctx.state, q, ctx.listOrder);
  let items = page.items;
  let next = page.nextAfter === undefined ? undefined : encodeToken(page.nextAfter);
  const incoming = url.searchParams.get("nextToken") || undefined;
  if (ctx.faults.repeatNextToken) next = incoming ?? next;
  if (ctx.faults.emptyPageWithToken) {
    items = [];
    // A token past the last sandbox, in the order being paged.
    const end = ctx.listOrder === "started" ? "-1~" : (ctx.state.sortedIds().at(-1) ?? "~");
    next ??= incoming ?? encodeToken(end);
  }
  const rendered = items.map((s) => renderSandbox(s, ctx.domain, false));
  if (ctx.tokenStyle === "body") {
    sendJson(
      res,
      200,
      next === undefined ? { sandboxes: rendered } : { sandboxes: rendered, nextToken: next },
    );
  } else {
    const headers: Record<string, string> = next === undefined ? {} : { "x-next-token": next };
    if (e2b && q.states.has("running"))
      headers["x-total-running"] = String(totalRunning(ctx.state, q));
    sendJson(res, 200, rendered, headers);
  }
};

/** E2B's X-Total-Running: running sandboxes matching the filters, whatever the page. */
function totalRunning(state: SimState, q: ListQuery): number {
  const running: ListQuery = { ...q, states: new Set(["running"]) };
  let n = 0;
  for (const s of state.sandboxes.values()) if (matches(s, running)) n++;
  return n;
}
