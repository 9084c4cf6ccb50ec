// The data-plane proxy: finds the sandbox as E2B's client proxy does (Host `{port}-{id}.{domain}`,
// or the E2b-Sandbox-Id/-Port headers) and serves its fake agent (envd) by the sandbox's version.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { isIP } from "node:net";
import type { SimContext } from "./context.js";
import { type EnvdRules, envdRules } from "./envd.js";
import { expireSandboxes } from "./expiry.js";
import { readFile, writeFile } from "./files-routes.js";
import { createSimServer, sendError, sendJson, sendMalformed } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { startProcess } from "./process-stream.js";
import { ENVD_PORT, servePort } from "./sandbox-ports.js";
import { resumePaused } from "./sandbox-routes.js";

type DataHandler = (
  ctx: SimContext,
  sandbox: SimSandbox,
  rules: EnvdRules,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  arrival: number,
) => void | Promise<void>;

const ROUTES: Record<string, DataHandler> = {
  "POST /process.Process/Start": (ctx, sandbox, rules, req, res, _url, arrival) =>
    startProcess(ctx, sandbox, rules, req, res, arrival),
  "GET /files": (_ctx, sandbox, rules, _req, res, url) => readFile(sandbox, rules, res, url),
  "POST /files": (_ctx, sandbox, rules, req, res, url) => writeFile(sandbox, rules, req, res, url),
  // envd answers its health check with 204 and no body, on every version.
  "GET /health": (_ctx, _sandbox, _rules, _req, res) => {
    res.writeHead(204, { "cache-control": "no-store" }).end();
  },
};
/** Routes envd serves without the access token (its authExcludedPaths, less the signed /files). */
const OPEN_ROUTES: ReadonlySet<string> = new Set(["GET /health"]);

const HEADER_ID = "e2b-sandbox-id";
const HEADER_PORT = "e2b-sandbox-port";

/** Where a request goes: a sandbox and port, or the proxy's 400 text. */
export type ProxyTarget = { port: number; sandboxId: string } | { refused: string };

/** Splits a Host header into the port and sandbox id, when it names a sandbox under `domain`. */
export function parseSandboxHost(
  host: string | undefined,
  domain: string,
): { port: number; sandboxId: string; domain: string } | undefined {
  if (!host) return undefined;
  const name = host.replace(/:\d+$/, "").toLowerCase();
  const m = /^(\d+)-([a-z0-9]+)\.(.+)$/.exec(name);
  if (!m) return undefined;
  const [, port, sandboxId, rest] = m as unknown as [string, string, string, string];
  return rest === domain.toLowerCase()
    ? { port: Number(port), sandboxId, domain: rest }
    : undefined;
}

/** The host name of a Host header, without the port or an IPv6 address' brackets. */
function hostname(host: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracketed) return bracketed[1] as string;
  return host.includes(":") && isIP(host) === 6 ? host : host.replace(/:\d+$/, "");
}

/**
 * E2B's GetTargetFromRequest (infra packages/shared/pkg/proxy/host.go): when the Host is an IP,
 * `localhost` or `sandbox.{domain}` and a routing header is present, the headers name the sandbox
 * (both required); otherwise the Host does.
 */
export function proxyTarget(req: IncomingMessage, domain: string): ProxyTarget {
  const host = req.headers.host ?? "";
  const name = hostname(host).toLowerCase();
  const shared = name === "localhost" || isIP(name) !== 0 || name === `sandbox.${domain}`;
  const id = header(req, HEADER_ID);
  const port = header(req, HEADER_PORT);
  if (shared && (id !== "" || port !== "")) {
    if (id === "" || port === "") return { refused: "missing header" };
    if (!/^\d+$/.test(port)) return { refused: "Invalid sandbox port" };
    if (!/^[a-z0-9]+$/.test(id)) return { refused: "Invalid sandbox ID" };
    return { port: Number(port), sandboxId: id };
  }
  const parsed = parseSandboxHost(host, domain);
  return parsed ?? { refused: "Invalid host" };
}

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? "";
}

/** The proxy's own 400, plain text as Go's http.Error writes it. */
function sendProxyText(res: ServerResponse, status: number, text: string): void {
  const body = `${text}\n`;
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** E2B's "sandbox not found" answer (template.NewSandboxNotFoundError, JSON for non-browsers). */
function sendSandboxNotFound(res: ServerResponse, sandboxId: string): void {
  sendJson(res, 502, { sandboxId, message: "The sandbox was not found", code: 502 });
}

async function dispatch(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const arrival = performance.now();
  const url = new URL(req.url ?? "/", "http://sandbox");
  const key = `${req.method ?? "GET"} ${url.pathname}`;
  ctx.counters.hit(key);
  expireSandboxes(ctx);

  const fault = ctx.faults.decide(key);
  if (fault.latencyMs > 0 && !(await ctx.timers.sleep(fault.latencyMs))) return;
  if (fault.status !== undefined) return sendError(res, fault.status, "injected fault");

  const target = proxyTarget(req, ctx.domain);
  if ("refused" in target) return sendProxyText(res, 400, target.refused);
  const sandbox = ctx.state.sandbox(target.sandboxId);
  if (!sandbox) return sendSandboxNotFound(res, target.sandboxId);
  // Any other port is a service's, which the proxy serves on its own terms.
  if (target.port !== ENVD_PORT) return servePort(ctx, sandbox, target.port, req, res, url);
  // A paused sandbox is resumed by traffic only when it was created with autoResume; otherwise
  // E2B's proxy finds it in no node's catalog and answers "not found".
  if (
    sandbox.state === "paused" &&
    (!sandbox.autoResume || resumePaused(ctx, sandbox) !== undefined)
  )
    return sendSandboxNotFound(res, target.sandboxId);
  if (sandbox.state !== "running") return sendSandboxNotFound(res, target.sandboxId);
  if (
    sandbox.accessToken !== undefined &&
    !OPEN_ROUTES.has(key) &&
    req.headers["x-access-token"] !== sandbox.accessToken
  ) {
    return sendError(
      res,
      401,
      "unauthorized access, please provide a valid access token or method signing if supported",
    );
  }
  const handler = ROUTES[key];
  if (!handler) return sendError(res, 404, `no route for ${key}`);
  if (fault.malformed) return sendMalformed(res);
  await handler(ctx, sandbox, envdRules(sandbox.envdVersion), req, res, url, arrival);
}

/**
 * The context of the team whose sandbox the request names: one proxy serves every team's
 * sandboxes, as E2B's does. A sandbox no team has gets the first team's "not found".
 */
function owner(ctx: SimContext, req: IncomingMessage): SimContext {
  if (ctx.cluster.length < 2) return ctx;
  const target = proxyTarget(req, ctx.domain);
  if ("refused" in target) return ctx;
  return ctx.cluster.find((c) => c.state.sandboxes.has(target.sandboxId)) ?? ctx;
}

/** Creates (does not listen) the data-plane proxy server of `ctx` and the teams of its cluster. */
export function createDataPlaneServer(ctx: SimContext): Server {
  return createSimServer((req, res) => dispatch(owner(ctx, req), req, res));
}
