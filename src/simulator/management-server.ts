// The management API server (/sandboxapi/v1/...) plus the control-channel routes at the root; in
// E2B mode, E2B's routes, all at the root.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { clusterRoutes } from "./cluster-routes.js";
import type { ApiHandler, SimContext } from "./context.js";
import { COST_TRUTH_PATH, serveCostTruth } from "./cost-truth.js";
import { E2B_ADMIN_ROUTES, E2B_OPEN_ROUTES, e2bRoutes } from "./e2b-routes.js";
import { expireSandboxes } from "./expiry.js";
import { createSimServer, hasApiKey, sendError, sendMalformed } from "./http-io.js";
import { listSandboxes } from "./list-sandboxes.js";
import { matchRoute, type RouteDef, type RouteMatch } from "./router.js";
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

/** Matches a request: below the prefix (or a control-channel route at the root), or E2B's at the root. */
function route(ctx: SimContext, method: string, pathname: string): RouteMatch<ApiHandler> {
  if (ctx.flavor === "e2b") return matchRoute(e2bRoutes, method, pathname);
  const prefixed = pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`);
  const path = prefixed ? pathname.slice(API_PREFIX.length) || "/" : pathname;
  return matchRoute(ROUTES, method, path, !prefixed);
}

/** Whether the request carries the admin token (E2B mode; never when none is set). */
export function isAdmin(ctx: SimContext, req: IncomingMessage): boolean {
  return ctx.adminToken !== undefined && req.headers["x-admin-token"] === ctx.adminToken;
}

/** Why the request may not have the route (status and message), or undefined when it may. */
function refusal(ctx: SimContext, req: IncomingMessage, key: string): [number, string] | undefined {
  if (ctx.flavor === "e2b") {
    if (E2B_OPEN_ROUTES.has(key)) return undefined;
    const denied = E2B_ADMIN_ROUTES.get(key);
    if (denied !== undefined)
      return isAdmin(ctx, req) ? undefined : [denied, "missing or invalid X-Admin-Token"];
  }
  if (ctx.apiKey !== undefined && !hasApiKey(req, ctx.apiKey))
    return [401, "missing or invalid API key"];
  return undefined;
}

/**
 * Counts, applies faults and auth, then runs the route's handler; `authorized`: a front that
 * served several teams already authenticated the request for this team (teams-server.ts).
 */
export async function dispatch(
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  authorized = false,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://simulator");
  const method = req.method ?? "GET";
  // Test-only, in both flavors: no fault, count or expiry touches the truth's read.
  if (method === "GET" && url.pathname === COST_TRUTH_PATH)
    return serveCostTruth(ctx.state, res, url);
  const match = route(ctx, method, url.pathname);
  ctx.counters.hit(match.key);
  expireSandboxes(ctx);

  const fault = ctx.faults.decide(match.key);
  if (fault.latencyMs > 0 && !(await ctx.timers.sleep(fault.latencyMs))) return;
  if (fault.status !== undefined) return sendError(res, fault.status, "injected fault");
  const refused = authorized ? undefined : refusal(ctx, req, match.key);
  if (refused) return sendError(res, ...refused);
  if (match.wrongMethod) return sendError(res, 405, `method ${method} not allowed`);
  if (!match.route) return sendError(res, 404, `no route for ${method} ${url.pathname}`);
  if (fault.malformed) return sendMalformed(res);
  await match.route.handler(ctx, req, res, match.params, url);
}

/** Creates (does not listen) the management API server. */
export function createManagementServer(ctx: SimContext): Server {
  return createSimServer((req, res) => dispatch(ctx, req, res));
}
