// Resource usage as E2B serves it: GET /sandboxes/metrics?sandbox_ids=a,b (latest sample of each
// running sandbox, at most 100 ids) and GET /sandboxes/{id}/metrics?start=&end= (a sample every 5 s).
import type { ApiHandler, SimContext } from "./context.js";
import { sendError, sendJson } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import type { RouteDef } from "./router.js";
import { sandboxUsage } from "./usage.js";

export { BUSY_CPU_PCT, cpuOf, IDLE_CPU_PCT } from "./usage.js";

const MAX_IDS = 100;
const SAMPLE_EVERY_S = 5;
/** Samples one history answer may hold. */
const MAX_SAMPLES = 1_000;

/** One SandboxMetric (E2B's schema) of `s` at `atS` (Unix seconds). */
function sample(s: SimSandbox, atS: number): Record<string, unknown> {
  return {
    timestamp: new Date(atS * 1000).toISOString(),
    timestampUnix: atS,
    ...sandboxUsage(s),
  };
}

function running(ctx: SimContext, s: SimSandbox): boolean {
  return s.state === "running" && ctx.state.clock.now() >= s.startedAt;
}

const sandboxesMetrics: ApiHandler = (ctx, _req, res, _params, url) => {
  const raw = url.searchParams.get("sandbox_ids") ?? "";
  const ids = raw === "" ? [] : raw.split(",");
  if (ids.length === 0) return sendError(res, 400, "sandbox_ids is required");
  if (ids.length > MAX_IDS) return sendError(res, 400, `at most ${MAX_IDS} sandbox_ids`);
  const nowS = Math.floor(ctx.state.clock.now() / 1000);
  const out: Record<string, unknown> = {};
  for (const id of ids) {
    const s = ctx.state.sandbox(id);
    if (s && running(ctx, s)) out[id] = sample(s, nowS);
  }
  sendJson(res, 200, { sandboxes: out });
};

const sandboxMetrics: ApiHandler = (ctx, _req, res, [id], url) => {
  const s = ctx.state.sandbox(id ?? "");
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  const nowS = Math.floor(ctx.state.clock.now() / 1000);
  const start = Number(url.searchParams.get("start") ?? nowS - 60);
  const end = Number(url.searchParams.get("end") ?? nowS);
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start)
    return sendError(res, 400, "start and end must be Unix seconds, start <= end");
  if (!running(ctx, s)) return sendJson(res, 200, []);
  // Samples exist from the sandbox's start on, every 5 s, up to now.
  const from = Math.max(start, Math.ceil(s.startedAt / 1000));
  const to = Math.min(end, nowS);
  const out: Array<Record<string, unknown>> = [];
  for (let t = from; t <= to && out.length < MAX_SAMPLES; t += SAMPLE_EVERY_S)
    out.push(sample(s, t));
  sendJson(res, 200, out);
};

/** Usage endpoints; E2B serves them below the API root. */
export const usageRoutes: RouteDef<ApiHandler>[] = [
  { method: "GET", template: "/sandboxes/metrics", handler: sandboxesMetrics, root: true },
  { method: "GET", template: "/sandboxes/{id}/metrics", handler: sandboxMetrics, root: true },
];
