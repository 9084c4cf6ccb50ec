// The HTTP face of the exporter: /metrics, /healthz, /readyz, /status, / and /-/reload.
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, isIPv4 } from "node:net";
import { authorize, requiresCredentials, type ServerAuth } from "./auth.js";
import { indexPage } from "./index-page.js";

/** Exposition formats the metrics layer renders. */
export type ExpositionFormat = "prometheus" | "openmetrics";

/** A rendered scrape body, as chunks written in order. */
export interface RenderedMetrics {
  body: Buffer[];
  contentType: string;
  contentEncoding?: "gzip";
}

/** Extra handler mounted by optional parts (e.g. /probe). */
export type RouteHandler = (req: IncomingMessage, url: URL, res: ServerResponse) => Promise<void>;

/** What the server serves; every part is injected by the CLI. */
export interface ServerDeps {
  render(format: ExpositionFormat, gzip: boolean): Promise<RenderedMetrics>;
  negotiate(accept: string | undefined): ExpositionFormat;
  status(): unknown;
  ready(): boolean;
  reload?(): Promise<{ ok: boolean; error?: string }>;
  /** Serve POST /-/reload (Prometheus' --web.enable-lifecycle); otherwise it answers 403. */
  enableLifecycle?: boolean;
  routes?: Record<string, RouteHandler>;
  auth?: ServerAuth;
  tls?: { cert: Buffer; key: Buffer };
  logger: { warn(obj: object, msg: string): void };
}

/** Prometheus' answer to a lifecycle call it was not started to accept, word for word. */
const LIFECYCLE_OFF = "Lifecycle API is not enabled.";

/** Routes whose requests make the exporter act on the platform: a probe creates a sandbox. */
const ACTING_ROUTES = ["/probe"];

/** A listening server. */
export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** Stops accepting, lets in-flight responses finish, then resolves. */
  close(): Promise<void>;
}

/** Splits "host:port", "[::1]:port" or ":port" into parts; "" host means every interface. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen);
  if (!m) throw new Error(`listen address "${listen}" is not host:port`);
  return { host: m[1] ?? m[2] ?? "", port: Number(m[3]) };
}

/** Starts the server on `listen` and resolves once it accepts connections. */
export async function startServer(listen: string, deps: ServerDeps): Promise<RunningServer> {
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    handle(deps, req, res).catch((err: unknown) => {
      deps.logger.warn({ err, path: req.url }, "request failed");
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  };
  const server = deps.tls
    ? createHttpsServer({ cert: deps.tls.cert, key: deps.tls.key }, handler)
    : createHttpServer(handler);
  server.keepAliveTimeout = 65_000;
  const { host, port } = parseListen(listen);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host || undefined, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `${deps.tls ? "https" : "http"}://${shownHost}:${address.port}`;
  warnIfOpen(deps, address.address, listen, url);
  return {
    url,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

async function handle(deps: ServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://exporter");
  const path = url.pathname;
  if (!authorize(deps.auth, req, path)) {
    res.setHeader("WWW-Authenticate", 'Basic realm="sandbox-exporter", charset="UTF-8"');
    send(res, 401, "text/plain; charset=utf-8", "unauthorized\n");
    return;
  }
  const extra = deps.routes?.[path];
  if (extra) return extra(req, url, res);
  switch (path) {
    case "/metrics": {
      if (!isRead(req)) return methodNotAllowed(res, "GET, HEAD");
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
      return;
    }
    case "/healthz":
      return send(res, 200, "text/plain; charset=utf-8", "ok\n");
    case "/readyz":
      return deps.ready()
        ? send(res, 200, "text/plain; charset=utf-8", "ready\n")
        : send(res, 503, "text/plain; charset=utf-8", "no poll cycle has completed yet\n");
    case "/status":
      return send(res, 200, "application/json", `${JSON.stringify(deps.status(), null, 2)}\n`);
    case "/-/reload": {
      if (req.method !== "POST" && req.method !== "PUT") return methodNotAllowed(res, "POST, PUT");
      if (!deps.enableLifecycle) return send(res, 403, "text/plain; charset=utf-8", LIFECYCLE_OFF);
      if (!deps.reload)
        return send(res, 404, "text/plain; charset=utf-8", "reload not available\n");
      const result = await deps.reload();
      return result.ok
        ? send(res, 200, "text/plain; charset=utf-8", "reloaded\n")
        : send(res, 500, "text/plain; charset=utf-8", `reload failed: ${result.error ?? ""}\n`);
    }
    case "/":
      return send(res, 200, "text/html; charset=utf-8", indexPage(Object.keys(deps.routes ?? {})));
    default:
      return send(res, 404, "text/plain; charset=utf-8", "not found\n");
  }
}

/**
 * Warns when anyone who reaches the port could make the exporter act (create probe sandboxes):
 * the bound address is not loopback, no credentials are required and such a route is served.
 */
function warnIfOpen(deps: ServerDeps, bound: string, listen: string, url: string): void {
  const acting = ACTING_ROUTES.filter((r) => deps.routes?.[r] !== undefined);
  if (acting.length === 0 || requiresCredentials(deps.auth) || isLoopback(bound)) return;
  deps.logger.warn(
    { listen, url, routes: acting },
    "the listener is reachable beyond loopback without authentication and serves routes that create sandboxes: set --web-bearer-token-file or server.basicAuthUsers, or listen on 127.0.0.1",
  );
}

/** 127.0.0.0/8, ::1 and IPv4-mapped 127.x; the wildcard addresses (0.0.0.0, ::) are not. */
export function isLoopback(address: string): boolean {
  const v4 = address.toLowerCase().startsWith("::ffff:") ? address.slice(7) : address;
  if (isIPv4(v4)) return v4.startsWith("127.");
  return address === "::1";
}

function isRead(req: IncomingMessage): boolean {
  return req.method === "GET" || req.method === "HEAD";
}

function methodNotAllowed(res: ServerResponse, allow: string): void {
  res.setHeader("Allow", allow);
  send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
}

/** Writes a complete small response. */
export function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", contentType);
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}
