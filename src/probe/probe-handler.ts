// GET /probe?module=NAME in the blackbox_exporter manner: runs one probe of a module and answers
// with that probe's metrics, or with a readable trace of the run when `debug=true`.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Registry } from "prom-client";
import type { Clock } from "../util/clock.js";
import type { Route, RouteHandler } from "../util/route.js";
import { ProbeFamilies, type ProbeId, ProbeMetrics } from "./probe-metrics.js";
import type { ProbeResult } from "./runner.js";
import { ProbeTrace } from "./trace.js";

/** Where the route is mounted. */
export const PROBE_PATH = "/probe";
/** Seconds kept back from Prometheus' scrape timeout for the answer itself (blackbox's offset). */
const SCRAPE_TIMEOUT_OFFSET_S = 0.5;
/** The header Prometheus sends with each scrape. */
const SCRAPE_TIMEOUT_HEADER = "x-prometheus-scrape-timeout-seconds";

/** A module the handler can run. */
export interface OnDemandModule {
  readonly module: string;
  readonly id: ProbeId;
  readonly labelNames: readonly string[];
  /** The module's own total timeout: the cap when the scrape timeout asks for more. */
  readonly totalTimeoutMs: number;
  /** Runs one probe; undefined when one of this module is already in flight or it is stopping. */
  runOnDemand(o: { timeoutMs?: number; trace?: ProbeTrace }): Promise<ProbeResult | undefined>;
}

/** What the handler needs. */
export interface ProbeHandlerDeps {
  /** The modules, in configuration order; `module=` may be left out when there is one. */
  modules: readonly OnDemandModule[];
  clock: Clock;
  monotonic: () => number;
  /** At most one on-demand probe of a module per this many ms; faster callers get 429. */
  minIntervalMs: number;
  namespace: string;
  /** Every answer body passes it (the one secret scrubber: agent tokens echoed into the trace). */
  scrub?: (text: string) => string;
}

/**
 * GET /probe as a route record: behind the listener's auth, acting (each call creates a sandbox),
 * shown on the landing page with the first module, so its link answers 200 rather than 400.
 */
export function probeRoute(deps: ProbeHandlerDeps): Route {
  const first = deps.modules[0]?.module;
  return {
    method: "GET",
    path: PROBE_PATH,
    auth: "authenticated",
    acting: true,
    description:
      "runs one probe of a module now and answers with its metrics (creates a sandbox; ?module=NAME, &debug=true for a trace)",
    ...(first !== undefined && { example: `${PROBE_PATH}?module=${encodeURIComponent(first)}` }),
    handler: probeHandler(deps),
  };
}

/** Builds the /probe handler; each answer is rendered from a fresh registry holding one probe. */
export function probeHandler(deps: ProbeHandlerDeps): RouteHandler {
  const last = new Map<string, number>();
  const byName = new Map(deps.modules.map((m) => [m.module, m]));
  const scrub = deps.scrub ?? ((t: string) => t);
  return async (req, url, res) => {
    // The server answers other methods from the route's record; this serves a handler mounted alone.
    if (req.method !== "GET") {
      text(res, 405, "method not allowed\n", { allow: "GET" });
      return;
    }
    const name = url.searchParams.get("module") ?? soleModule(deps.modules);
    const module = name === undefined ? undefined : byName.get(name);
    if (!module) {
      const known = deps.modules.map((m) => m.module).join(", ");
      const why = name === undefined ? "module parameter is missing" : `unknown module ${name}`;
      text(res, 400, `${why}; modules: ${known}\n`);
      return;
    }
    const timeout = scrapeTimeoutMs(req);
    if (timeout instanceof Error) {
      text(res, 400, `${timeout.message}\n`);
      return;
    }
    const now = deps.clock.now();
    const previous = last.get(module.module);
    if (previous !== undefined && now - previous < deps.minIntervalMs) {
      tooMany(res, deps.minIntervalMs - (now - previous), "on-demand probes are rate-limited");
      return;
    }
    // Taken before the run, so concurrent callers are limited while it is in flight too.
    last.set(module.module, now);
    const debug = url.searchParams.get("debug") === "true";
    const trace = debug ? new ProbeTrace(deps.monotonic) : undefined;
    const result = await module.runOnDemand({
      ...(timeout !== undefined && { timeoutMs: timeout }),
      ...(trace && { trace }),
    });
    if (!result) {
      last.delete(module.module);
      tooMany(res, deps.minIntervalMs, `a probe of module ${module.module} is already running`);
      return;
    }
    if (trace) {
      const head = appliedTimeout(timeout, module.totalTimeoutMs);
      text(res, 200, scrub(head + trace.render(module.module, result)));
      return;
    }
    const registry = new Registry();
    const families = new ProbeFamilies(registry, {
      namespace: deps.namespace,
      history: false,
      extraLabels: module.labelNames,
    });
    new ProbeMetrics(families, module.id).record(result);
    const body = scrub(await registry.metrics());
    res.writeHead(200, { "content-type": registry.contentType });
    res.end(body);
  };
}

/** The trace's first line: the cap the run had, and where it came from. */
function appliedTimeout(scrapeMs: number | undefined, totalMs: number): string {
  if (scrapeMs !== undefined && scrapeMs < totalMs)
    return `Timeout: ${scrapeMs} ms (the scrape timeout less ${SCRAPE_TIMEOUT_OFFSET_S} s)\n`;
  return `Timeout: ${totalMs} ms (the module's total timeout)\n`;
}

function soleModule(modules: readonly OnDemandModule[]): string | undefined {
  return modules.length === 1 ? modules[0]?.module : undefined;
}

/** The run's cap from Prometheus' header, minus the offset; an Error names a bad header. */
function scrapeTimeoutMs(req: IncomingMessage): number | undefined | Error {
  const raw = req.headers[SCRAPE_TIMEOUT_HEADER];
  if (raw === undefined) return undefined;
  const s = Number(Array.isArray(raw) ? raw[0] : raw);
  if (!Number.isFinite(s) || s <= 0)
    return new Error(`header X-Prometheus-Scrape-Timeout-Seconds: not a positive number`);
  // A scrape timeout below the offset still leaves the probe something to run with.
  return Math.round(Math.max(s - SCRAPE_TIMEOUT_OFFSET_S, s / 2) * 1000);
}

function text(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { ...headers, "content-type": "text/plain; charset=utf-8" });
  res.end(body);
}

function tooMany(res: ServerResponse, waitMs: number, why: string): void {
  text(res, 429, `${why}\n`, { "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))) });
}
