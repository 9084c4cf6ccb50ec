// E2B's cursor paging (packages/api/internal/utils/pagination.go), as GET /v2/templates and GET
// /snapshots serve it: records newest first (creation time, then id, both descending), `limit`
// 1-100 a page (default 100), and while more follow an `X-Next-Token` header holding the cursor of
// the page's last record (base64url of "<RFC 3339 time>__<id>").
import type { ApiHandler, SimContext } from "./context.js";
import { sendError, sendJson } from "./http-io.js";

/** E2B's default and largest page. */
const MAX_LIMIT = 100;

/** One record of a paged list: its body, and the creation time and id it is ordered by. */
export interface CursorRow {
  body: unknown;
  at: number;
  id: string;
}

/** A list's refusal of its own query parameters (a filter that does not parse). */
export interface RowsRefusal {
  status: number;
  message: string;
}

type Cursor = { at: number; id: string };

/** The paged list of the rows `rows` makes from the request's filters (after the paging checks). */
export function cursorPaged(
  rows: (ctx: SimContext, url: URL) => CursorRow[] | RowsRefusal,
): ApiHandler {
  return (ctx, _req, res, _params, url) => {
    const rawLimit = url.searchParams.get("limit");
    const limit = rawLimit === null ? MAX_LIMIT : Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      return sendError(res, 400, `limit must be an integer from 1 to ${MAX_LIMIT}`);
    const token = url.searchParams.get("nextToken");
    const cursor = token === null ? undefined : parseCursor(token);
    if (cursor === null) return sendError(res, 400, "Invalid next token");
    const all = rows(ctx, url);
    if (!Array.isArray(all)) return sendError(res, all.status, all.message);
    const left = all
      .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .filter((x) => !cursor || x.at < cursor.at || (x.at === cursor.at && x.id < cursor.id));
    const page = left.slice(0, limit);
    const last = page[page.length - 1];
    const headers: Record<string, string> =
      left.length > limit && last ? { "X-Next-Token": cursorToken(last) } : {};
    sendJson(
      res,
      200,
      page.map((x) => x.body),
      headers,
    );
  };
}

/** GET /v2/templates over the records `render` makes (E2B's Template: templateID, createdAt). */
export function pagedTemplates(render: (ctx: SimContext) => Record<string, unknown>[]): ApiHandler {
  return cursorPaged((ctx) =>
    render(ctx).map((body) => ({
      body,
      at: Date.parse(String(body.createdAt)),
      id: String(body.templateID),
    })),
  );
}

function cursorToken(c: Cursor): string {
  return Buffer.from(`${new Date(c.at).toISOString()}__${c.id}`).toString("base64url");
}

/** The cursor a token holds; null when it holds none. */
function parseCursor(token: string): Cursor | null {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const cut = text.indexOf("__");
  const at = Date.parse(text.slice(0, cut));
  if (cut < 0 || !Number.isFinite(at) || cut + 2 >= text.length) return null;
  return { at, id: text.slice(cut + 2) };
}
