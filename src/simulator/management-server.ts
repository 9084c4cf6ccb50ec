// The management API server (/sandboxapi/v1/...) plus the control-channel routes at the root.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { clusterRoutes } from "./cluster-routes.js";
import type { ApiHandler, SimContext } from "./context.js";
import { createSimServer, hasApiKey, sendError, sendMalformed } from "./http-io.js";
import { listSandboxes } from "./list-sandboxes.js";
import { matchRoute, type RouteDef } from "./router.js";
import { sandboxLogs } from "./sandbox-logs.js";
import { sandboxRoutes } from "./sandbox-routes.js";
import { usageRoutes } from "./usage-routes.js";

/** Path prefix of the management API. */
export const API_PREFIX = "/sandboxapi/v1";

const ROUTES: RouteDef<ApiHandler>[] = [
  ...clusterRoutes,
  { method: "GET", template: "/v2/sandboxes", handler: listSandboxes },
  { method: "GET", template: "/v2/sandboxes/{id}/logs", handler: sandboxLogs },
  // Before /sandboxes/{id}, which would take "metrics" for an id.
  ...usageRoutes,
  ...sandboxRoutes,
];

/** Counts, applies faults and auth, then runs the route's handler. */
async function dispatch(ctx: SimContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://simulator");
  const method = req.method ?? "GET";
  const prefixed = url.pathname === API_PREFIX || url.pathname.startsWith(`${API_PREFIX}/`);
  const path = prefixed ? url.pathname.slice(API_PREFIX.length) || "/" : url.pathname;
  const match = matchRoute(ROUTES, method, path, !prefixed);
  ctx.counters.hit(match.key);

  const fault = ctx.faults.decide(match.key);
  if (fault.latencyMs > 0 && !(await ctx.timers.sleep(fault.latencyMs))) return;
  if (fault.status !== undefined) return sendError(res, fault.status, "injected fault");
  if (ctx.apiKey !== undefined && !hasApiKey(req, ctx.apiKey)) {
    return sendError(res, 401, "missing or invalid API key");
  }
  if (match.wrongMethod) return sendError(res, 405, `method ${method} not allowed`);
  if (!match.route) return sendError(res, 404, `no route for ${method} ${url.pathname}`);
  if (fault.malformed) return sendMalformed(res);
  await match.route.handler(ctx, req, res, match.params, url);
}

/** Creates (does not listen) the management API server. */
export function createManagementServer(ctx: SimContext): Server {
  return createSimServer((req, res) => dispatch(ctx, req, res));
}
