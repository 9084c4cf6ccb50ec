// Health, cluster overview, nodes and templates.
import type { ApiHandler } from "./context.js";
import { sendError, sendJson } from "./http-io.js";
import { nodeUsage, renderNode, renderOverview, renderTemplate } from "./render.js";
import type { RouteDef } from "./router.js";

const health: ApiHandler = (ctx, _req, res) => {
  if (ctx.faults.healthDown)
    sendJson(res, 503, { status: "unavailable", message: "management plane is down" });
  else sendJson(res, 200, { status: "ok" });
};

const overview: ApiHandler = (ctx, _req, res) => {
  sendJson(res, 200, renderOverview(ctx.state));
};

const listNodes: ApiHandler = (ctx, _req, res) => {
  const usage = nodeUsage(ctx.state);
  sendJson(
    res,
    200,
    ctx.state.nodes.map((n) => renderNode(n, usage.get(n.nodeID), false)),
  );
};

const getNode: ApiHandler = (ctx, _req, res, [id]) => {
  const node = ctx.state.node(id ?? "");
  if (!node) return sendError(res, 404, `node '${id}' not found`);
  sendJson(res, 200, renderNode(node, nodeUsage(ctx.state).get(node.nodeID), true));
};

const listTemplates: ApiHandler = (ctx, _req, res) => {
  sendJson(
    res,
    200,
    ctx.state.templates.map((t) => renderTemplate(t, false)),
  );
};

const getTemplate: ApiHandler = (ctx, _req, res, [id]) => {
  const template = ctx.state.templates.find((t) => t.templateID === id);
  if (!template) return sendError(res, 404, `template '${id}' not found`);
  sendJson(res, 200, renderTemplate(template, true));
};

/** Read-only cluster endpoints. */
export const clusterRoutes: RouteDef<ApiHandler>[] = [
  { method: "GET", template: "/health", handler: health },
  { method: "GET", template: "/cluster/overview", handler: overview },
  { method: "GET", template: "/nodes", handler: listNodes },
  { method: "GET", template: "/nodes/{id}", handler: getNode },
  { method: "GET", template: "/templates", handler: listTemplates },
  { method: "GET", template: "/templates/{id}", handler: getTemplate },
];
