// GET /v2/sandboxes/{id}/logs: cursor paging in either direction over a sandbox's log entries.
import type { ApiHandler } from "./context.js";
import { sendError, sendJson } from "./http-io.js";
import type { SimLogEntry } from "./model.js";
import { iso } from "./render.js";

/** A page of log entries and the cursor of the next one. */
export interface LogPage {
  entries: SimLogEntry[];
  nextCursor: number | undefined;
}

/**
 * Cursors are entry indexes: forward pages are [cursor, cursor+limit), backward pages end before
 * the cursor and come newest first. Appends never shift an index, so cursors stay valid.
 */
export function logPage(
  logs: readonly SimLogEntry[],
  direction: "forward" | "backward",
  cursor: number | undefined,
  limit: number,
): LogPage {
  if (direction === "forward") {
    const start = Math.min(cursor ?? 0, logs.length);
    const end = Math.min(start + limit, logs.length);
    return { entries: logs.slice(start, end), nextCursor: end < logs.length ? end : undefined };
  }
  const end = Math.min(cursor ?? logs.length, logs.length);
  const start = Math.max(end - limit, 0);
  return { entries: logs.slice(start, end).reverse(), nextCursor: start > 0 ? start : undefined };
}

function parseCursor(raw: string | null): number | undefined | "invalid" {
  if (raw === null || raw === "") return undefined;
  const text = Buffer.from(raw, "base64url").toString("utf8");
  return /^\d{1,9}$/.test(text) ? Number(text) : "invalid";
}

/** Handler of GET /v2/sandboxes/{id}/logs. */
export const sandboxLogs: ApiHandler = (ctx, _req, res, [id], url) => {
  const sandbox = ctx.state.sandbox(id ?? "");
  if (!sandbox) return sendError(res, 404, `sandbox '${id}' not found`);
  const direction = url.searchParams.get("direction") ?? "forward";
  if (direction !== "forward" && direction !== "backward") {
    return sendError(res, 400, `invalid direction '${direction}'`);
  }
  const cursor = parseCursor(url.searchParams.get("cursor"));
  if (cursor === "invalid") return sendError(res, 400, "invalid cursor");
  let limit = ctx.pageSizeCap;
  const rawLimit = url.searchParams.get("limit");
  if (rawLimit !== null) {
    const n = Number(rawLimit);
    if (!Number.isInteger(n) || n < 1) return sendError(res, 400, `invalid limit '${rawLimit}'`);
    limit = Math.min(n, ctx.pageSizeCap);
  }
  const page = logPage(sandbox.logs, direction, cursor, limit);
  const body: Record<string, unknown> = {
    logs: page.entries.map((e) => ({ timestamp: iso(e.timestamp), line: e.line, level: e.level })),
  };
  if (page.nextCursor !== undefined) {
    body.nextCursor = Buffer.from(String(page.nextCursor), "utf8").toString("base64url");
  }
  sendJson(res, 200, body);
};

/** Most entries one E2B log page may hold (its documented maximum and default). */
const E2B_MAX_LOGS = 1000;

/**
 * GET /v2/sandboxes/{id}/logs as E2B serves it: `cursor` is a time in epoch ms (forward: entries
 * at or after it, oldest first; backward, the default: at or before it, newest first), `{logs}`
 * carries SandboxLogEntry records, and no cursor comes back (the caller goes on from a time).
 */
export const sandboxLogsE2b: ApiHandler = (ctx, _req, res, [id], url) => {
  const sandbox = ctx.state.sandbox(id ?? "");
  if (!sandbox) return sendError(res, 404, `sandbox '${id}' not found`);
  const direction = url.searchParams.get("direction") ?? "backward";
  if (direction !== "forward" && direction !== "backward") {
    return sendError(res, 400, `invalid direction '${direction}'`);
  }
  const cursor = wholeNumber(url.searchParams.get("cursor"));
  const limit = wholeNumber(url.searchParams.get("limit"));
  if (cursor === "invalid") return sendError(res, 400, "cursor must be epoch milliseconds");
  if (limit === "invalid" || (limit ?? 0) > E2B_MAX_LOGS)
    return sendError(res, 400, `limit must be an integer from 0 to ${E2B_MAX_LOGS}`);
  const max = limit ?? E2B_MAX_LOGS;
  const entries: SimLogEntry[] = [];
  const logs = sandbox.logs;
  if (direction === "forward") {
    const from = cursor ?? 0;
    for (let i = 0; i < logs.length && entries.length < max; i++) {
      const e = logs[i] as SimLogEntry;
      if (e.timestamp >= from) entries.push(e);
    }
  } else {
    const to = cursor ?? ctx.clock.now();
    for (let i = logs.length - 1; i >= 0 && entries.length < max; i--) {
      const e = logs[i] as SimLogEntry;
      if (e.timestamp <= to) entries.push(e);
    }
  }
  sendJson(res, 200, {
    logs: entries.map((e) => ({
      timestamp: iso(e.timestamp),
      level: e.level,
      message: e.line,
      fields: {},
    })),
  });
};

function wholeNumber(raw: string | null): number | undefined | "invalid" {
  if (raw === null || raw === "") return undefined;
  return /^\d{1,15}$/.test(raw) ? Number(raw) : "invalid";
}
