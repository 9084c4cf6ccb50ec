// One-sandbox endpoints: read, delete, pause, resume (E2B: connect), and the control-channel create.
import { z } from "zod";
import type { ApiHandler, SimContext } from "./context.js";
import { BodyTooLargeError, readBody, sendError, sendJson } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { renderNewSandbox, renderSandbox } from "./render.js";
import type { RouteDef } from "./router.js";

const MAX_JSON_BODY = 1024 * 1024;
/** E2B's default time to live of a new sandbox, seconds. */
const DEFAULT_TIMEOUT_S = 15;

const CreateBody = z.object({
  templateID: z.string().min(1),
  timeout: z.number().int().min(0).optional(),
  metadata: z.record(z.string(), z.string()).optional(),
});
const ResumeBody = z.object({ timeout: z.number().int().min(0).optional() }).passthrough();
/** E2B's ConnectSandbox: the timeout is required. */
const ConnectBody = z.object({ timeout: z.number().int().min(0) }).passthrough();

/** Parses an optional JSON body with `schema`; a string is the 400 message. */
async function parseBody<T>(
  req: Parameters<ApiHandler>[1],
  schema: z.ZodType<T>,
  required: boolean,
): Promise<T | { error: string }> {
  let raw: Buffer;
  try {
    raw = await readBody(req, MAX_JSON_BODY);
  } catch (err) {
    if (err instanceof BodyTooLargeError) return { error: err.message };
    throw err;
  }
  if (raw.byteLength === 0 && !required) raw = Buffer.from("{}");
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    return { error: "request body is not valid JSON" };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    return { error: `invalid request body: ${parsed.error.issues[0]?.message ?? ""}` };
  return parsed.data;
}

function isError(v: unknown): v is { error: string } {
  return typeof v === "object" && v !== null && "error" in v && typeof v.error === "string";
}

const getSandbox: ApiHandler = (ctx, _req, res, [id]) => {
  const s = ctx.state.sandbox(id ?? "");
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  sendJson(res, 200, {
    ...renderSandbox(s, ctx.domain, true),
    state: s.visibleState(ctx.clock.now()),
  });
};

const deleteSandbox: ApiHandler = (ctx, _req, res, [id]) => {
  if (ctx.faults.deleteFails !== undefined)
    return sendError(res, ctx.faults.deleteFails, "delete failed");
  // Paused or not: deleting never needs a resume.
  if (!ctx.state.removeSandbox(id ?? "")) return sendError(res, 404, `sandbox '${id}' not found`);
  res.writeHead(204).end();
};

/** Files and background processes stay; the lifecycle knobs may lose the sandbox or not pause it. */
const pauseSandbox: ApiHandler = (ctx, _req, res, [id]) => {
  const s = ctx.state.sandbox(id ?? "");
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  if (s.state !== "running")
    return sendError(res, 409, `sandbox '${id}' is ${s.state}, not running`);
  const knobs = ctx.faults.lifecycle;
  if (knobs.notFoundAfterPause) ctx.state.removeSandbox(s.sandboxID);
  else if (!knobs.stayRunningAfterPause) {
    changeState(ctx, s, "paused", knobs.pauseDelayMs);
  }
  res.writeHead(204).end();
};

/** Moves a sandbox to `state`; reads keep reporting the old one for `delayMs` (simulator clock). */
function changeState(ctx: SimContext, s: SimSandbox, state: string, delayMs = 0): void {
  s.shownState = delayMs > 0 ? { state: s.state, until: ctx.clock.now() + delayMs } : undefined;
  s.state = state;
}

/**
 * Resumes a paused sandbox (resume and E2B's connect), with its files and background processes
 * unless a knob loses them; a string is the refusal (500) of a knob failing the Nth resume.
 */
function resume(ctx: SimContext, s: SimSandbox): string | undefined {
  const knobs = ctx.faults.lifecycle;
  s.resumes++;
  if (knobs.failResumeFrom !== undefined && s.resumes >= knobs.failResumeFrom)
    return `resume ${s.resumes} of sandbox '${s.sandboxID}' failed`;
  if (knobs.loseFilesOnResume) s.files.clear();
  if (knobs.loseProcessesOnResume) s.processes.clear();
  changeState(ctx, s, "running", knobs.resumeDelayMs);
  return undefined;
}

const resumeSandbox: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await parseBody(req, ResumeBody, false);
  if (isError(body)) return sendError(res, 400, body.error);
  const s = ctx.state.sandbox(id ?? "");
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  if (s.state !== "paused") return sendError(res, 409, `sandbox '${id}' is ${s.state}, not paused`);
  const refused = resume(ctx, s);
  if (refused !== undefined) return sendError(res, 500, refused);
  if (body.timeout !== undefined) s.endAt = ctx.clock.now() + body.timeout * 1000;
  sendJson(res, 201, renderSandbox(s, ctx.domain, true));
};

const createSandbox: ApiHandler = async (ctx, req, res) => {
  if (ctx.faults.createFails !== undefined)
    return sendError(res, ctx.faults.createFails, "create failed");
  const body = await parseBody(req, CreateBody, true);
  if (isError(body)) return sendError(res, 400, body.error);
  const template = ctx.state.template(body.templateID);
  if (!template) return sendError(res, 404, `template '${body.templateID}' not found`);
  if (template.status !== "ready") {
    return sendError(res, 400, `template '${body.templateID}' is ${template.status}, not ready`);
  }
  if (!ctx.state.nodes.some((n) => n.status === "ready")) {
    return sendError(res, 503, "no node can accept sandboxes");
  }
  const sandbox = ctx.state.addSandbox(createInit(ctx, template.templateID, body));
  template.spawnCount++;
  const node = ctx.state.node(sandbox.nodeID);
  if (node) node.createSuccesses++;
  sendJson(res, 201, renderNewSandbox(sandbox, ctx.domain));
};

/**
 * E2B's connect: resumes a paused sandbox (201) or finds it running (200); either way its time to
 * live becomes at least `timeout` seconds from now, and the answer is the sandbox as create sends it.
 */
const connectSandbox: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await parseBody(req, ConnectBody, true);
  if (isError(body)) return sendError(res, 400, body.error);
  const s = ctx.state.sandbox(id ?? "");
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  if (s.state !== "paused" && s.state !== "running")
    return sendError(res, 409, `sandbox '${id}' is ${s.state}`);
  const resumed = s.state === "paused";
  if (resumed) {
    const refused = resume(ctx, s);
    if (refused !== undefined) return sendError(res, 500, refused);
  }
  s.endAt = Math.max(s.endAt, ctx.clock.now() + body.timeout * 1000);
  sendJson(res, resumed ? 201 : 200, renderNewSandbox(s, ctx.domain));
};

function createInit(ctx: SimContext, templateID: string, body: z.infer<typeof CreateBody>) {
  const now = ctx.clock.now();
  return {
    templateID,
    state: "running",
    startedAt: now,
    endAt: now + (body.timeout ?? DEFAULT_TIMEOUT_S) * 1000,
    metadata: body.metadata ?? {},
    accessToken: `ea_${ctx.createRng.chars(32)}`,
    logs: [],
  };
}

/** Sandbox endpoints; these are also reachable without the API prefix (control channel). */
export const sandboxRoutes: RouteDef<ApiHandler>[] = [
  { method: "POST", template: "/sandboxes", handler: createSandbox, root: true },
  { method: "GET", template: "/sandboxes/{id}", handler: getSandbox, root: true },
  { method: "DELETE", template: "/sandboxes/{id}", handler: deleteSandbox, root: true },
  { method: "POST", template: "/sandboxes/{id}/pause", handler: pauseSandbox, root: true },
  { method: "POST", template: "/sandboxes/{id}/resume", handler: resumeSandbox, root: true },
];

/** E2B's way to resume (served in E2B mode only). */
export const connectRoute: RouteDef<ApiHandler> = {
  method: "POST",
  template: "/sandboxes/{id}/connect",
  handler: connectSandbox,
};
