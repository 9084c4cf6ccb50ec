// E2B mode: the routes of E2B's hosted API, all at the root. No cluster overview; nodes for
// admins only; sandboxes in states E2B does not know (starting, killing) are not there at all.
import type { ApiHandler, SimContext } from "./context.js";
import { pagedTemplates } from "./cursor-pages.js";
import { eventRoutes } from "./events.js";
import { expireSandboxes } from "./expiry.js";
import { sendError, sendJson } from "./http-io.js";
import { E2B_STATES, listSandboxes } from "./list-sandboxes.js";
import { NO_USAGE, type NodeUsage, nodeUsage } from "./render.js";
import {
  renderE2bNode,
  renderE2bSnapshotTemplate,
  renderE2bTemplate,
  renderE2bTemplateBuilds,
} from "./render-e2b.js";
import type { RouteDef } from "./router.js";
import { sandboxLogsE2b } from "./sandbox-logs.js";
import { e2bSandboxRoutes, sandboxRoutes } from "./sandbox-routes.js";
import type { SimState } from "./state.js";
import { storageRoutes } from "./storage-routes.js";
import { teamRoutes } from "./team-routes.js";
import { usageRoutes } from "./usage-routes.js";
import { webhookRoutes } from "./webhooks.js";

/** Routes (counter keys) E2B serves without the API key. */
export const E2B_OPEN_ROUTES: ReadonlySet<string> = new Set(["GET /health"]);
/** The admin's count of running sandboxes by team (E2B's GetAdminSandboxesRunningCounts). */
export const RUNNING_COUNTS_PATH = "/admin/sandboxes/running-counts";
/**
 * Routes E2B serves only with the X-Admin-Token header (and without the API key), each with the
 * status of a request without the right token: 401 as E2B answers (adminValidationFunction), but
 * the nodes' 403, which the simulator has answered from the start and tests pin.
 */
export const E2B_ADMIN_ROUTES: ReadonlyMap<string, number> = new Map([
  ["GET /nodes", 403],
  ["GET /nodes/{id}", 403],
  [`GET ${RUNNING_COUNTS_PATH}`, 401],
]);

const health: ApiHandler = (ctx, _req, res) => {
  if (ctx.faults.healthDown) return sendError(res, 503, "management plane is down");
  res.writeHead(204).end();
};

/** Usage of the cluster's nodes: every team's sandboxes on them. */
function clusterUsage(ctx: SimContext): Map<string, NodeUsage> {
  return nodeUsage(
    ctx.state,
    ctx.cluster.filter((c) => c !== ctx).map((c) => c.state),
  );
}

const listNodes: ApiHandler = (ctx, _req, res) => {
  const usage = clusterUsage(ctx);
  sendJson(
    res,
    200,
    ctx.state.nodes.map((n) => renderE2bNode(n, usage.get(n.nodeID) ?? NO_USAGE, false)),
  );
};

const getNode: ApiHandler = (ctx, _req, res, [id]) => {
  const node = ctx.state.node(id ?? "");
  if (!node) return sendError(res, 404, `node '${id}' not found`);
  sendJson(res, 200, renderE2bNode(node, clusterUsage(ctx).get(node.nodeID) ?? NO_USAGE, true));
};

/**
 * Running sandboxes by team id, a team without any left out (E2B's AdminTeamRunningSandboxCounts:
 * `minimum: 1`). E2B serves a snapshot up to 5 s old; the simulator counts now.
 */
const runningCounts: ApiHandler = (ctx, _req, res) => {
  const out: Record<string, number> = {};
  for (const team of ctx.cluster) {
    expireSandboxes(team);
    let running = 0;
    for (const s of team.state.sandboxes.values()) if (s.state === "running") running++;
    if (running > 0) out[team.team.teamId] = running;
  }
  sendJson(res, 200, out);
};

/** Start time (epoch ms) of each template's newest sandbox. */
function lastSpawned(state: SimState): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of state.sandboxes.values()) {
    const at = out.get(s.templateID);
    if (at === undefined || s.startedAt > at) out.set(s.templateID, s.startedAt);
  }
  return out;
}

/** Every template as E2B's lists render it. */
function e2bTemplates(ctx: SimContext): Record<string, unknown>[] {
  const spawned = lastSpawned(ctx.state);
  return ctx.state.templates.map((t) => renderE2bTemplate(t, spawned.get(t.templateID)));
}

const listTemplates: ApiHandler = (ctx, _req, res) => sendJson(res, 200, e2bTemplates(ctx));

/** E2B looks the raw id up and nothing else: no tag, no alias (GetTemplateByIDWithAliases). */
const getTemplate: ApiHandler = (ctx, _req, res, [id = ""]) => {
  const template = ctx.state.templates.find((t) => t.templateID === id);
  if (template)
    return sendJson(res, 200, renderE2bTemplateBuilds(template, lastSpawned(ctx.state).get(id)));
  const snapshot = ctx.state.snapshots.get(id);
  if (snapshot) return sendJson(res, 200, renderE2bSnapshotTemplate(snapshot));
  sendError(res, 404, `Template ${id} not found`);
};

/** E2B's TemplateBuildInfo of one build: no build logs, and the reason of a failed build. */
const templateBuildStatus: ApiHandler = (ctx, _req, res, [id, buildId]) => {
  const build = ctx.state.templateBuild(id ?? "", buildId ?? "");
  if (!build) return sendError(res, 404, `build '${buildId}' of template '${id}' not found`);
  sendJson(res, 200, {
    templateID: id,
    buildID: buildId,
    status: build.status,
    logs: [],
    logEntries: [],
    ...(build.reason && { reason: { ...build.reason, logEntries: [] } }),
  });
};

/** A sandbox route that answers 404 for a sandbox E2B would not show (neither running nor paused). */
function visibleOnly(route: RouteDef<ApiHandler>): RouteDef<ApiHandler> {
  if (!route.template.includes("{id}")) return route;
  const inner = route.handler;
  const handler: ApiHandler = (ctx, req, res, params, url) => {
    const id = params[0] ?? "";
    const s = ctx.state.sandbox(id);
    if (s && !E2B_STATES.has(s.state)) return sendError(res, 404, `sandbox '${id}' not found`);
    return inner(ctx, req, res, params, url);
  };
  return { ...route, handler };
}

/** Every route of E2B mode; the usage routes come before /sandboxes/{id}, which would take them. */
export const e2bRoutes: RouteDef<ApiHandler>[] = [
  { method: "GET", template: "/health", handler: health },
  { method: "GET", template: "/nodes", handler: listNodes },
  { method: "GET", template: "/nodes/{id}", handler: getNode },
  { method: "GET", template: RUNNING_COUNTS_PATH, handler: runningCounts },
  { method: "GET", template: "/templates", handler: listTemplates },
  { method: "GET", template: "/v2/templates", handler: pagedTemplates(e2bTemplates) },
  { method: "GET", template: "/templates/{id}", handler: getTemplate },
  {
    method: "GET",
    template: "/templates/{id}/builds/{buildID}/status",
    handler: templateBuildStatus,
  },
  { method: "GET", template: "/v2/sandboxes", handler: listSandboxes },
  ...eventRoutes,
  ...webhookRoutes,
  ...teamRoutes,
  ...storageRoutes,
  ...[
    { method: "GET", template: "/v2/sandboxes/{id}/logs", handler: sandboxLogsE2b },
    ...usageRoutes,
    ...sandboxRoutes,
    ...e2bSandboxRoutes,
  ].map(visibleOnly),
];
