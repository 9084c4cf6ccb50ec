// GET /probe in the blackbox_exporter manner: runs one probe and answers with that probe's metrics.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Registry } from "prom-client";
import type { Clock } from "../util/clock.js";
import { ProbeMetrics } from "./probe-metrics.js";
import type { ProbeResult } from "./runner.js";

/** Same shape as the server's RouteHandler (the probe layer does not import the server's). */
export type ProbeRouteHandler = (
  req: IncomingMessage,
  url: URL,
  res: ServerResponse,
) => Promise<void>;

/** What the handler needs. */
export interface ProbeHandlerDeps {
  /** Runs one probe; undefined when one is already in flight or the prober is stopping. */
  run(): Promise<ProbeResult | undefined>;
  clock: Clock;
  /** At most one on-demand probe per this many ms; faster callers get 429. */
  minIntervalMs: number;
  namespace: string;
  /** The module and template labels of the probe series. */
  module: string;
  template: string;
}

/** Builds the /probe handler; each answer is rendered from a fresh registry holding one probe. */
export function probeHandler(deps: ProbeHandlerDeps): ProbeRouteHandler {
  let last: number | undefined;
  return async (req, _url, res) => {
    if (req.method !== "GET") {
      res.writeHead(405, { allow: "GET", "content-type": "text/plain; charset=utf-8" });
      res.end("method not allowed\n");
      return;
    }
    const now = deps.clock.now();
    if (last !== undefined && now - last < deps.minIntervalMs) {
      tooMany(res, deps.minIntervalMs - (now - last), "on-demand probes are rate-limited");
      return;
    }
    // Taken before the run, so concurrent callers are limited while it is in flight too.
    last = now;
    const result = await deps.run();
    if (!result) {
      last = undefined;
      tooMany(res, deps.minIntervalMs, "a probe is already running");
      return;
    }
    const registry = new Registry();
    new ProbeMetrics(registry, {
      namespace: deps.namespace,
      history: false,
      module: deps.module,
      template: deps.template,
    }).record(result);
    const body = await registry.metrics();
    res.writeHead(200, { "content-type": registry.contentType });
    res.end(body);
  };
}

function tooMany(res: ServerResponse, waitMs: number, why: string): void {
  res.writeHead(429, {
    "retry-after": String(Math.max(1, Math.ceil(waitMs / 1000))),
    "content-type": "text/plain; charset=utf-8",
  });
  res.end(`${why}\n`);
}
