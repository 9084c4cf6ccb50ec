// One table of every HTTP route, built-in and feature: method, auth, whether it acts on the
// platform, description and handler, declared once. The server dispatches from it, its auth and its
// start-up warning read it, and the landing page is generated from it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Route } from "../util/route.js";
import { indexPage } from "./index-page.js";
import { send } from "./respond.js";

export {
  type HttpMethod,
  isOpen,
  methodsOf,
  type Route,
  type RouteAuth,
  type RouteHandler,
  type RouteRefusal,
} from "../util/route.js";

/** Exposition formats the metrics layer renders. */
export type ExpositionFormat = "prometheus" | "openmetrics";

/** A rendered scrape body, as chunks written in order. */
export interface RenderedMetrics {
  body: Buffer[];
  contentType: string;
  contentEncoding?: "gzip";
}

/** What the built-in routes serve; every part is injected. */
export interface BuiltinRouteDeps {
  render(format: ExpositionFormat, gzip: boolean): Promise<RenderedMetrics>;
  negotiate(accept: string | undefined): ExpositionFormat;
  status(): unknown;
  ready(): boolean;
  reload?(): Promise<{ ok: boolean; error?: string }>;
  /** Serve POST /-/reload (Prometheus' --web.enable-lifecycle); otherwise it answers 403. */
  enableLifecycle?: boolean;
}

/** Prometheus' answer to a lifecycle call it was not started to accept, word for word. */
const LIFECYCLE_OFF = "Lifecycle API is not enabled.";
const TEXT = "text/plain; charset=utf-8";
/** What every page answers, so a health check or a curl -I gets the same status as a GET. */
const READ: Route["method"] = ["GET", "HEAD"];

/**
 * The table: the built-in routes, then `features` (the probe's, the webhook's). Throws when two
 * routes share a path: a feature cannot shadow /metrics, nor another feature.
 */
export function routeTable(
  deps: BuiltinRouteDeps,
  features: readonly Route[] = [],
): ReadonlyMap<string, Route> {
  const table = new Map<string, Route>();
  for (const route of [...builtinRoutes(deps, () => indexPage([...table.values()])), ...features]) {
    if (table.has(route.path)) throw new Error(`two routes for ${route.path}`);
    table.set(route.path, route);
  }
  return table;
}

/** /metrics, /status, /healthz, /readyz, /-/reload and the landing page `page()`. */
function builtinRoutes(deps: BuiltinRouteDeps, page: () => string): Route[] {
  return [
    {
      method: READ,
      path: "/metrics",
      auth: "authenticated",
      acting: false,
      description: "Prometheus metrics (cached snapshot of the last poll)",
      handler: (req, _url, res) => metrics(deps, req, res),
    },
    {
      method: READ,
      path: "/status",
      auth: "authenticated",
      acting: false,
      description:
        "last cycle per collector, durations, errors, staleness; probe runs; the policy's plan (JSON)",
      handler: async (_req, _url, res) =>
        send(res, 200, "application/json", `${JSON.stringify(deps.status(), null, 2)}\n`),
    },
    {
      method: READ,
      path: "/healthz",
      // Orchestrators probe liveness and readiness without credentials.
      auth: "open",
      acting: false,
      description: "liveness",
      handler: async (_req, _url, res) => send(res, 200, TEXT, "ok\n"),
    },
    {
      method: READ,
      path: "/readyz",
      auth: "open",
      acting: false,
      description: "readiness: 200 once some collector's data is good, 503 before",
      handler: async (_req, _url, res) =>
        deps.ready() ? send(res, 200, TEXT, "ready\n") : send(res, 503, TEXT, "no good data yet\n"),
    },
    {
      method: ["POST", "PUT"],
      path: "/-/reload",
      auth: "authenticated",
      acting: false,
      description:
        "reloads the configuration and the web config file (403 unless --web.enable-lifecycle)",
      handler: (_req, _url, res) => reload(deps, res),
    },
    {
      method: READ,
      path: "/",
      auth: "authenticated",
      acting: false,
      description: "this page",
      hidden: true,
      handler: async (_req, _url, res) => send(res, 200, "text/html; charset=utf-8", page()),
    },
  ];
}

async function metrics(
  deps: BuiltinRouteDeps,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
  const out = await deps.render(deps.negotiate(req.headers.accept), gzip);
  res.statusCode = 200;
  res.setHeader("Content-Type", out.contentType);
  if (out.contentEncoding) res.setHeader("Content-Encoding", out.contentEncoding);
  res.setHeader(
    "Content-Length",
    out.body.reduce((n, b) => n + b.byteLength, 0),
  );
  if (req.method !== "HEAD") for (const chunk of out.body) res.write(chunk);
  res.end();
}

async function reload(deps: BuiltinRouteDeps, res: ServerResponse): Promise<void> {
  if (!deps.enableLifecycle) return send(res, 403, TEXT, LIFECYCLE_OFF);
  if (!deps.reload) return send(res, 404, TEXT, "reload not available\n");
  const result = await deps.reload();
  return result.ok
    ? send(res, 200, TEXT, "reloaded\n")
    : send(res, 500, TEXT, `reload failed: ${result.error ?? ""}\n`);
}
