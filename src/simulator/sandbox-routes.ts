// One-sandbox endpoints: read, delete, pause, resume (E2B: connect v1 and v2, timeout), and create.
import { z } from "zod";
import type { ApiHandler, SimContext } from "./context.js";
import { compareVersions } from "./envd.js";
import { BodyTooLargeError, readBody, sendError, sendJson } from "./http-io.js";
import { launchSource } from "./launch-source.js";
import type { SimSandbox } from "./model.js";
import { renderNewSandbox, renderSandbox } from "./render.js";
import type { RouteDef } from "./router.js";

const MAX_JSON_BODY = 1024 * 1024;
/** E2B's default time to live of a sandbox created by POST /sandboxes, seconds. */
const DEFAULT_TIMEOUT_S = 15;
/** E2B's default time to live of POST /v2/sandboxes and of v2 connect without a timeout, seconds. */
const DEFAULT_TIMEOUT_V2_S = 300;
/** Oldest envd that takes an access token (infra's minEnvdVersionForSecureFlag). */
const MIN_SECURE_ENVD = "0.2.0";

const OnTimeout = z.enum(["kill", "pause"]);
const CreateBody = z.object({
  templateID: z.string().min(1),
  timeout: z.number().int().min(0).optional(),
  metadata: z.record(z.string(), z.string()).optional(),
  /** E2B's NewSandbox field: pause, not kill, at the timeout. */
  autoPause: z.boolean().optional(),
  /** The same, as E2B's SDK option and sandbox info spell it (`lifecycle.onTimeout`). */
  lifecycle: z
    .object({ onTimeout: z.union([OnTimeout, z.object({ action: OnTimeout })]).optional() })
    .optional(),
  /** E2B's SandboxAutoResumeConfig (NewSandbox and NewSandboxV2): traffic resumes it once paused. */
  autoResume: z.object({ enabled: z.boolean() }).optional(),
  /** E2B's SandboxNetworkConfig: allowPublicTraffic false asks for the traffic token. */
  network: z.object({ allowPublicTraffic: z.boolean().optional() }).passthrough().optional(),
});
/** E2B's NewSandboxV2: always secured. */
const CreateV2Body = CreateBody;
const ResumeBody = z.object({ timeout: z.number().int().min(0).optional() }).passthrough();
/** E2B's ConnectSandbox: the timeout is required. */
const ConnectBody = z.object({ timeout: z.number().int().min(0) }).passthrough();
/** E2B's ConnectSandboxV2: the body and its timeout are optional; a zero timeout is refused. */
const ConnectV2Body = z.object({ timeout: z.number().int().min(1).optional() }).passthrough();
/** E2B's SandboxTimeoutRequest. */
const TimeoutBody = z.object({ timeout: z.number().int() }).passthrough();

/** Parses an optional JSON body with `schema`; a string is the 400 message. */
export async function parseBody<T>(
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

/** Whether parseBody refused the body. */
export function isError(v: unknown): v is { error: string } {
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
  // The sandbox vanishing on pause is a platform fault: its kill has no reason E2B would name.
  if (knobs.notFoundAfterPause) ctx.state.removeSandbox(s.sandboxID, "unknown");
  else if (!knobs.stayRunningAfterPause) {
    changeState(ctx, s, "paused", knobs.pauseDelayMs);
    s.pausedAt = ctx.clock.now();
    s.firstPauseFiles ??= new Map(s.files);
    ctx.state.lifecycle("paused", s);
  }
  res.writeHead(204).end();
};

/** Moves a sandbox to `state`; reads keep reporting the old one for `delayMs` (simulator clock). */
function changeState(ctx: SimContext, s: SimSandbox, state: string, delayMs = 0): void {
  s.shownState = delayMs > 0 ? { state: s.state, until: ctx.clock.now() + delayMs } : undefined;
  s.state = state;
}

/**
 * Resumes a paused sandbox (resume, E2B's connect and auto-resume), with its files and background
 * processes unless a knob loses them; a string is the refusal (500) of a knob failing the Nth resume.
 */
export function resumePaused(ctx: SimContext, s: SimSandbox): string | undefined {
  const knobs = ctx.faults.lifecycle;
  s.resumes++;
  if (knobs.failResumeFrom !== undefined && s.resumes >= knobs.failResumeFrom) {
    // E2B's orchestrator tears down a sandbox whose in-place resume failed (emitSandboxKilled).
    if (knobs.killOnFailedResume) ctx.state.removeSandbox(s.sandboxID, "resume_failed");
    return `resume ${s.resumes} of sandbox '${s.sandboxID}' failed`;
  }
  if (knobs.loseFilesOnResume) s.files.clear();
  if (knobs.loseProcessesOnResume) s.processes.clear();
  const stale = knobs.filesFromFirstPauseFromResume;
  if (stale !== undefined && s.resumes >= stale && s.firstPauseFiles) {
    s.files.clear();
    for (const [path, content] of s.firstPauseFiles) s.files.set(path, content);
  }
  if (knobs.rotateTokenOnResume && s.accessToken !== undefined)
    s.accessToken = `ea_${ctx.createRng.chars(32)}`;
  changeState(ctx, s, "running", knobs.resumeDelayMs);
  ctx.state.lifecycle("resumed", s);
  return undefined;
}

const resumeSandbox: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await parseBody(req, ResumeBody, false);
  if (isError(body)) return sendError(res, 400, body.error);
  const s = ctx.state.sandbox(id ?? "");
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  if (s.state !== "paused") return sendError(res, 409, `sandbox '${id}' is ${s.state}, not paused`);
  const refused = resumePaused(ctx, s);
  if (refused !== undefined) return sendError(res, 500, refused);
  if (body.timeout !== undefined) s.endAt = ctx.clock.now() + body.timeout * 1000;
  sendJson(res, 201, renderSandbox(s, ctx.domain, true));
};

/** What a create asks for, whichever route it came by. */
interface CreateRequest {
  templateID: string;
  timeoutS: number;
  metadata: Record<string, string> | undefined;
  autoResume: boolean;
  /** Paused, not killed, at the timeout (E2B mode only: this platform's create has no such field). */
  autoPause?: boolean;
  /** network.allowPublicTraffic false: its service ports want the traffic token (E2B mode only). */
  restricted?: boolean;
}

/** Whether a create body asks for auto-pause, in either spelling. */
function asksAutoPause(body: z.infer<typeof CreateBody>): boolean {
  const onTimeout = body.lifecycle?.onTimeout;
  const action = typeof onTimeout === "object" ? onTimeout.action : onTimeout;
  return body.autoPause ?? action === "pause";
}

/** Creates a sandbox from `body` and answers 201 (or the refusal), as both create routes do. */
function create(
  ctx: SimContext,
  res: Parameters<ApiHandler>[2],
  body: CreateRequest,
  secureOnly: boolean,
) {
  const source = launchSource(ctx, body.templateID);
  if (Array.isArray(source)) return sendError(res, ...source);
  if (source.status !== "ready") {
    return sendError(res, 400, `template '${body.templateID}' is ${source.status}, not ready`);
  }
  if (secureOnly && compareVersions(source.envdVersion, MIN_SECURE_ENVD) < 0) {
    return sendError(res, 400, "Template is not compatible with secured access.");
  }
  if (!ctx.state.nodes.some((n) => n.status === "ready")) {
    return sendError(res, 503, "no node can accept sandboxes");
  }
  const limit = ctx.team.concurrencyLimit;
  if (limit !== undefined && ctx.team.history.runningCount() >= limit) {
    return sendError(res, 429, concurrencyLimitText(limit));
  }
  const sandbox = ctx.state.addSandbox({
    ...createInit(ctx, source.templateID, body),
    ...source.init,
  });
  sandbox.autoPause = ctx.flavor === "e2b" && body.autoPause === true;
  sandbox.autoResume = ctx.flavor === "e2b" && body.autoResume;
  const fault = ctx.faults.publicTraffic;
  const token =
    ctx.flavor === "e2b" && body.restricted && fault !== "no_token"
      ? ctx.createRng.chars(32)
      : undefined;
  if (fault === undefined) sandbox.trafficToken = token;
  sandbox.fileClock = ctx.clock;
  source.spawned();
  const node = ctx.state.node(sandbox.nodeID);
  if (node) node.createSuccesses++;
  sendJson(res, 201, {
    ...renderNewSandbox(sandbox, ctx.domain),
    ...(token !== undefined ? { trafficAccessToken: token } : {}),
  });
}

/** E2B's 429 text at its concurrency limit (api/internal/orchestrator/create_instance.go). */
export function concurrencyLimitText(limit: number): string {
  return `you have reached the maximum number of concurrent E2B sandboxes (${limit}). If you need more, please visit 'https://e2b.dev/docs/billing'`;
}

const createSandbox: ApiHandler = async (ctx, req, res) => {
  if (ctx.faults.createFails !== undefined)
    return sendError(res, ctx.faults.createFails, "create failed");
  const body = await parseBody(req, CreateBody, true);
  if (isError(body)) return sendError(res, 400, body.error);
  const { templateID, metadata } = body;
  const timeoutS = body.timeout ?? DEFAULT_TIMEOUT_S;
  const autoPause = asksAutoPause(body);
  const autoResume = body.autoResume?.enabled === true;
  const restricted = body.network?.allowPublicTraffic === false;
  create(ctx, res, { templateID, timeoutS, metadata, autoResume, autoPause, restricted }, false);
};

/** E2B's POST /v2/sandboxes (what its SDK 2.51 creates with): secured, 300 s by default. */
const createSandboxV2: ApiHandler = async (ctx, req, res) => {
  if (ctx.faults.createFails !== undefined)
    return sendError(res, ctx.faults.createFails, "create failed");
  const body = await parseBody(req, CreateV2Body, true);
  if (isError(body)) return sendError(res, 400, body.error);
  const { templateID, metadata } = body;
  const timeoutS = body.timeout ?? DEFAULT_TIMEOUT_V2_S;
  const autoResume = body.autoResume?.enabled === true;
  const autoPause = asksAutoPause(body);
  const restricted = body.network?.allowPublicTraffic === false;
  create(ctx, res, { templateID, timeoutS, metadata, autoResume, autoPause, restricted }, true);
};

/**
 * E2B's connect: resumes a paused sandbox (201) or finds it running (200); either way its time to
 * live becomes at least `timeoutS` seconds from now, and the answer is the sandbox as create sends it.
 */
function connect(ctx: SimContext, res: Parameters<ApiHandler>[2], id: string, timeoutS: number) {
  const s = ctx.state.sandbox(id);
  if (!s) return sendError(res, 404, `sandbox '${id}' not found`);
  if (s.state !== "paused" && s.state !== "running")
    return sendError(res, 409, `sandbox '${id}' is ${s.state}`);
  const resumed = s.state === "paused";
  if (resumed) {
    const refused = resumePaused(ctx, s);
    if (refused !== undefined) return sendError(res, 500, refused);
  }
  const endAt = Math.max(s.endAt, ctx.clock.now() + timeoutS * 1000);
  const extended = endAt !== s.endAt;
  s.endAt = endAt;
  // A running sandbox's longer time to live is an update, as E2B's orchestrator records it.
  if (extended && !resumed) ctx.state.lifecycle("updated", s);
  sendJson(res, resumed ? 201 : 200, renderNewSandbox(s, ctx.domain));
}

const connectSandbox: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await parseBody(req, ConnectBody, true);
  if (isError(body)) return sendError(res, 400, body.error);
  connect(ctx, res, id ?? "", body.timeout);
};

/** POST /v2/sandboxes/{id}/connect: no field required (E2B's TestSandboxConnectV2), 300 s default. */
const connectSandboxV2: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await parseBody(req, ConnectV2Body, false);
  if (isError(body)) return sendError(res, 400, body.error);
  connect(ctx, res, id ?? "", body.timeout ?? DEFAULT_TIMEOUT_V2_S);
};

/**
 * POST /sandboxes/{id}/timeout: the time to live becomes `timeout` seconds from now, shorter or
 * longer (KeepAliveFor with allowShorter); a paused sandbox is in no node's store, so 404.
 */
const setSandboxTimeout: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await parseBody(req, TimeoutBody, true);
  if (isError(body)) return sendError(res, 400, body.error);
  const s = ctx.state.sandbox(id ?? "");
  if (s?.state !== "running") return sendError(res, 404, `sandbox '${id}' not found`);
  s.endAt = ctx.clock.now() + Math.max(0, body.timeout) * 1000;
  ctx.state.lifecycle("updated", s);
  res.writeHead(204).end();
};

function createInit(ctx: SimContext, templateID: string, body: CreateRequest) {
  const now = ctx.clock.now();
  return {
    templateID,
    state: "running",
    startedAt: now,
    endAt: now + body.timeoutS * 1000,
    metadata: body.metadata ?? {},
    accessToken: `ea_${ctx.createRng.chars(32)}`,
    autoResume: body.autoResume,
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

/** E2B's own routes: its ways to resume, the v2 create and the time to live (E2B mode only). */
export const e2bSandboxRoutes: RouteDef<ApiHandler>[] = [
  { method: "POST", template: "/v2/sandboxes", handler: createSandboxV2 },
  { method: "POST", template: "/sandboxes/{id}/connect", handler: connectSandbox },
  { method: "POST", template: "/v2/sandboxes/{id}/connect", handler: connectSandboxV2 },
  { method: "POST", template: "/sandboxes/{id}/timeout", handler: setSandboxTimeout },
];
