// The data-plane proxy: routes by Host `{port}-{sandboxId}.{domain}` to the sandbox's fake agent.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { SimContext } from "./context.js";
import { readFile, writeFile } from "./files-routes.js";
import { createSimServer, sendError, sendMalformed } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { startProcess } from "./process-stream.js";

type DataHandler = (
  ctx: SimContext,
  sandbox: SimSandbox,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  arrival: number,
) => void | Promise<void>;

const ROUTES: Record<string, DataHandler> = {
  "POST /process.Process/Start": (ctx, sandbox, req, res, _url, arrival) =>
    startProcess(ctx, sandbox, req, res, arrival),
  "GET /files": (_ctx, sandbox, _req, res, url) => readFile(sandbox, res, url),
  "POST /files": (_ctx, sandbox, req, res, url) => writeFile(sandbox, req, res, url),
};

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

async function dispatch(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const arrival = performance.now();
  const url = new URL(req.url ?? "/", "http://sandbox");
  const key = `${req.method ?? "GET"} ${url.pathname}`;
  ctx.counters.hit(key);

  const fault = ctx.faults.decide(key);
  if (fault.latencyMs > 0 && !(await ctx.timers.sleep(fault.latencyMs))) return;
  if (fault.status !== undefined) return sendError(res, fault.status, "injected fault");

  const target = parseSandboxHost(req.headers.host, ctx.domain);
  if (!target)
    return sendError(res, 400, `host '${req.headers.host ?? ""}' does not name a sandbox`);
  const sandbox = ctx.state.sandbox(target.sandboxId);
  // Routing never resumes anything: a paused sandbox stays paused.
  if (!sandbox) return sendError(res, 502, `sandbox '${target.sandboxId}' not found`);
  if (sandbox.state === "paused")
    return sendError(res, 409, `sandbox '${target.sandboxId}' is paused`);
  if (sandbox.state !== "running") {
    return sendError(res, 502, `sandbox '${target.sandboxId}' is ${sandbox.state}, not running`);
  }
  if (sandbox.accessToken !== undefined && req.headers["x-access-token"] !== sandbox.accessToken) {
    return sendError(res, 401, "missing or invalid access token");
  }
  const handler = ROUTES[key];
  if (!handler) return sendError(res, 404, `no route for ${key}`);
  if (fault.malformed) return sendMalformed(res);
  await handler(ctx, sandbox, req, res, url, arrival);
}

/** Creates (does not listen) the data-plane proxy server. */
export function createDataPlaneServer(ctx: SimContext): Server {
  return createSimServer((req, res) => dispatch(ctx, req, res));
}
