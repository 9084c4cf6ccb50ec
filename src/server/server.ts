// The HTTP face of the exporter: /metrics, /healthz, /readyz, /status, / and /-/reload.
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer, Server as HttpsServer } from "node:https";
import { type AddressInfo, isIPv4 } from "node:net";
import type { TLSSocket } from "node:tls";
import type { Clock } from "../util/clock.js";
import {
  ListenerAuth,
  LoginVerifier,
  type PasswordCompare,
  refuseLogin,
  type ServerAuth,
} from "./auth.js";
import { indexPage } from "./index-page.js";
import {
  clientCertRefusal,
  secureContextOptions,
  type TlsSettings,
  verifyMode,
  type WebConfig,
  WebConfigError,
} from "./web-config.js";

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
  /** The landing page's link to an extra route when its bare path is no page (/probe needs ?module=). */
  links?: Record<string, string>;
  /** Deprecated listener settings (server.bearerTokenFile, server.basicAuthUsers). */
  auth?: ServerAuth;
  /** Deprecated listener settings (server.tlsCertFile, server.tlsKeyFile). */
  tls?: { cert: Buffer; key: Buffer };
  /** The --web.config.file (exporter-toolkit's format); not together with `auth` or `tls`. */
  webConfig?: WebConfig;
  /** Paths served without credentials, beyond /healthz and /readyz. */
  openPaths?: readonly string[];
  /** Checks a basic-auth password against its bcrypt hash (tests count the calls); default bcryptjs. */
  passwordCompare?: PasswordCompare;
  /** Told of every request the listener's auth refused (401), by path (the webhook counts its own). */
  onUnauthorized?(path: string): void;
  logger: { warn(obj: object, msg: string): void };
  /** Paces the listener's rate-limited warnings (refused logins). */
  clock: Clock;
}

/** What guards the listener now; replaced whole when the web config file is reloaded. */
interface ListenerSecurity {
  auth: ListenerAuth;
  headers: Readonly<Record<string, string>>;
  tls: TlsSettings | undefined;
}

/** Prometheus' answer to a lifecycle call it was not started to accept, word for word. */
const LIFECYCLE_OFF = "Lifecycle API is not enabled.";

/** Routes whose requests make the exporter act on the platform: a probe creates a sandbox. */
const ACTING_ROUTES = ["/probe"];

/** A listening server. */
export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /**
   * Applies a reloaded web config file: new users, headers, certificate and client-certificate
   * policy for the next connections. Throws WebConfigError (and changes nothing) when it would turn
   * TLS on or off, which takes a restart.
   */
  setWebConfig(config: WebConfig): void;
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
  if (deps.webConfig && (deps.auth || deps.tls))
    throw new WebConfigError(
      deps.webConfig.file,
      "",
      "replaces the deprecated auth and TLS: not both",
    );
  // One verifier for the server's life: its bcrypt threads, and the logins it remembers across reloads.
  const verifier = new LoginVerifier({
    ...(deps.passwordCompare ? { compare: deps.passwordCompare } : {}),
    logger: deps.logger,
    clock: deps.clock,
  });
  const securityOf = (web: WebConfig | undefined): ListenerSecurity => {
    const users = web && Object.keys(web.users).length > 0 ? { basicUsers: web.users } : undefined;
    const options = { verifier, ...(deps.openPaths ? { openPaths: deps.openPaths } : {}) };
    return {
      auth: new ListenerAuth(web ? users : deps.auth, options),
      headers: web?.headers ?? {},
      tls: web?.tls,
    };
  };
  let security = securityOf(deps.webConfig);
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    handle(deps, security, req, res).catch((err: unknown) => {
      deps.logger.warn({ err, path: req.url }, "request failed");
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  };
  const tls = security.tls;
  const server = tls
    ? createHttpsServer({ ...secureContextOptions(tls), ...verifyMode(tls) }, handler)
    : deps.tls
      ? createHttpsServer({ cert: deps.tls.cert, key: deps.tls.key }, handler)
      : createHttpServer(handler);
  if (server instanceof HttpsServer) {
    // What OpenSSL's verify mode cannot enforce alone (a required but unverified certificate,
    // allowed SANs) ends the connection before any request is read.
    server.on("secureConnection", (socket: TLSSocket) => {
      if (clientCertRefusal(security.tls, socket) !== undefined) socket.destroy();
    });
  }
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
  const url = `${server instanceof HttpsServer ? "https" : "http"}://${shownHost}:${address.port}`;
  warnIfOpen(deps, security.auth.required, address.address, listen, url);
  return {
    url,
    port: address.port,
    setWebConfig(next: WebConfig): void {
      const tlsNow = security.tls !== undefined || deps.tls !== undefined;
      if ((next.tls !== undefined) !== tlsNow)
        throw new WebConfigError(
          next.file,
          "tls_server_config",
          `turning TLS ${tlsNow ? "off" : "on"} takes a restart`,
        );
      if (next.tls) {
        const https = server as HttpsServer;
        https.setSecureContext(secureContextOptions(next.tls));
        // Read by node:tls for each new connection.
        Object.assign(https, verifyMode(next.tls));
      }
      security = securityOf(next);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }).then(() => verifier.close()),
  };
}

async function handle(
  deps: ServerDeps,
  security: ListenerSecurity,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://exporter");
  const path = url.pathname;
  for (const [name, value] of Object.entries(security.headers)) res.setHeader(name, value);
  const verdict = await security.auth.check(req, path);
  if (verdict !== "ok") {
    if (verdict === "unauthorized") deps.onUnauthorized?.(path);
    return refuseLogin(res, verdict);
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
        : send(res, 503, "text/plain; charset=utf-8", "no good data yet\n");
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
      return send(
        res,
        200,
        "text/html; charset=utf-8",
        indexPage(Object.keys(deps.routes ?? {}), deps.links),
      );
    default:
      return send(res, 404, "text/plain; charset=utf-8", "not found\n");
  }
}

/**
 * Warns when anyone who reaches the port could make the exporter act (create probe sandboxes):
 * the bound address is not loopback, no credentials are required and such a route is served.
 */
function warnIfOpen(
  deps: ServerDeps,
  authRequired: boolean,
  bound: string,
  listen: string,
  url: string,
): void {
  const acting = ACTING_ROUTES.filter((r) => deps.routes?.[r] !== undefined);
  if (acting.length === 0 || authRequired || isLoopback(bound)) return;
  deps.logger.warn(
    { listen, url, routes: acting },
    "the listener is reachable beyond loopback without authentication and serves routes that create sandboxes: set basic_auth_users in --web.config.file, or listen on 127.0.0.1",
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
