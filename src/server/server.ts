// The HTTP face of the exporter: the listener (HTTP or TLS), its auth, and dispatch from the route
// table (routes.ts): 404 for a path not in it, 405 for a method the route does not declare.
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
import { methodNotAllowed, send } from "./respond.js";
import { type BuiltinRouteDeps, isOpen, methodsOf, type Route, routeTable } from "./routes.js";
import {
  clientCertRefusal,
  secureContextOptions,
  type TlsSettings,
  verifyMode,
  type WebConfig,
  WebConfigError,
} from "./web-config.js";

export type {
  ExpositionFormat,
  RenderedMetrics,
  Route,
  RouteHandler,
} from "./routes.js";

/** What the server serves; every part is injected by the CLI. */
export interface ServerDeps extends BuiltinRouteDeps {
  /** The features' routes (the probe's, the webhook's), mounted beside the built-in ones. */
  routes?: readonly Route[];
  /** Deprecated listener settings (server.bearerTokenFile, server.basicAuthUsers). */
  auth?: ServerAuth;
  /** Deprecated listener settings (server.tlsCertFile, server.tlsKeyFile). */
  tls?: { cert: Buffer; key: Buffer };
  /** The --web.config.file (exporter-toolkit's format); not together with `auth` or `tls`. */
  webConfig?: WebConfig;
  /** Checks a basic-auth password against its bcrypt hash (tests count the calls); default bcryptjs. */
  passwordCompare?: PasswordCompare;
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

/** A listening server. */
export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** The route table served, built-in routes first, in the order the landing page lists them. */
  readonly routes: readonly Route[];
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
  const table = routeTable(deps, deps.routes);
  // One verifier for the server's life: its bcrypt threads, and the logins it remembers across reloads.
  const verifier = new LoginVerifier({
    ...(deps.passwordCompare ? { compare: deps.passwordCompare } : {}),
    logger: deps.logger,
    clock: deps.clock,
  });
  const securityOf = (web: WebConfig | undefined): ListenerSecurity => {
    const users = web && Object.keys(web.users).length > 0 ? { basicUsers: web.users } : undefined;
    return {
      auth: new ListenerAuth(web ? users : deps.auth, { verifier }),
      headers: web?.headers ?? {},
      tls: web?.tls,
    };
  };
  let security = securityOf(deps.webConfig);
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    handle(table, security, req, res).catch((err: unknown) => {
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
  warnIfOpen(deps, table, security.auth.required, address.address, listen, url);
  return {
    url,
    port: address.port,
    routes: [...table.values()],
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

/** Auth unless the route is open, then the method, then the route's handler. */
async function handle(
  table: ReadonlyMap<string, Route>,
  security: ListenerSecurity,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://exporter");
  const route = table.get(url.pathname);
  for (const [name, value] of Object.entries(security.headers)) res.setHeader(name, value);
  // A path not in the table asks for credentials too: an unauthenticated caller learns nothing.
  if (route === undefined || !isOpen(route)) {
    const verdict = await security.auth.check(req);
    if (verdict !== "ok") {
      if (verdict === "unauthorized") route?.refused?.("unauthorized");
      return refuseLogin(res, verdict);
    }
  }
  if (route === undefined) return send(res, 404, "text/plain; charset=utf-8", "not found\n");
  const methods = methodsOf(route);
  if (!methods.some((m) => m === req.method)) {
    route.refused?.("method");
    return methodNotAllowed(res, methods);
  }
  return route.handler(req, url, res);
}

/**
 * Warns when anyone who reaches the port could make the exporter act (create probe sandboxes):
 * the bound address is not loopback and an acting route takes requests without credentials.
 */
function warnIfOpen(
  deps: ServerDeps,
  table: ReadonlyMap<string, Route>,
  authRequired: boolean,
  bound: string,
  listen: string,
  url: string,
): void {
  const acting = [...table.values()]
    .filter((r) => r.acting && (!authRequired || isOpen(r)))
    .map((r) => r.path);
  if (acting.length === 0 || isLoopback(bound)) return;
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
