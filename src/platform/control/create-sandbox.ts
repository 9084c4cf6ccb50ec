// POST {apiUrl}/sandboxes: the body in the platform's form, the tokens of the answer made secrets,
// and a 429 classified for whoever learns the concurrency limit from it.

import { PlatformHttpError } from "../http-errors.js";
import { normalizeSandbox } from "../normalize/normalize.js";
import { classifyCreateRejection } from "../normalize/team-metrics.js";
import type { ControlCore } from "./control-core.js";
import type { CreatedSandbox, CreateRequest } from "./control-types.js";
import type { Call, Reply } from "./transport.js";

/**
 * POST {apiUrl}/sandboxes (outside the management prefix): one attempt, never retried. It asks
 * for a secured sandbox unless `secure` is false, as E2B's SDK does; the agent access token it
 * returns joins the secrets scrubbed from errors. `autoPause`: the platform pauses the sandbox
 * at its timeout instead of killing it; only E2B's create takes it (`autoPause`, what its SDK
 * sends for `lifecycle.onTimeout: "pause"`), so elsewhere it is not sent and `autoPause` is false.
 * `autoPauseTimeoutS`: the timeout asked for when auto-pause is sent; where it is not, the
 * sandbox keeps `timeoutS` (a short timeout without auto-pause would only kill it early).
 */
export async function createSandbox(
  core: ControlCore,
  req: CreateRequest,
): Promise<CreatedSandbox> {
  const e2b = core.o.flavor === "e2b";
  const autoPause = req.autoPause === true && e2b;
  const autoResume = req.autoResume === true && autoPause;
  const body = {
    templateID: req.templateId,
    timeout: autoPause ? (req.autoPauseTimeoutS ?? req.timeoutS) : req.timeoutS,
    metadata: req.metadata,
    secure: req.secure ?? true,
    ...(autoPause ? { autoPause } : {}),
    ...(autoResume ? { autoResume: { enabled: true } } : {}),
    ...(req.allowPublicTraffic === false && e2b ? { network: { allowPublicTraffic: false } } : {}),
  };
  const call: Call = {
    method: "POST",
    path: "/sandboxes",
    endpoint: "/sandboxes",
    body,
    root: true,
  };
  const raw = (await sendCreate(core, call)).body;
  const agent = agentOf(raw);
  const secrets = core.transport.secrets;
  if (agent.accessToken) secrets.addTransient(agent.accessToken);
  const traffic = (raw as { trafficAccessToken?: unknown } | null)?.trafficAccessToken;
  const trafficAccessToken = typeof traffic === "string" && traffic !== "" ? traffic : undefined;
  if (trafficAccessToken) secrets.addTransient(trafficAccessToken);
  return core.decode("/sandboxes", "POST", () => {
    const s = normalizeSandbox(core.n, raw, "created");
    return {
      id: s.id,
      templateId: s.templateId || req.templateId,
      ...(s.domain ? { domain: s.domain } : {}),
      ...agent,
      ...(req.autoPause !== undefined ? { autoPause } : {}),
      ...(req.autoResume !== undefined ? { autoResume } : {}),
      ...(trafficAccessToken ? { trafficAccessToken } : {}),
      raw,
    };
  });
}

/** A create; a 429 is reported to onCreateRejected, classified by its text, then rethrown. */
async function sendCreate(core: ControlCore, call: Call): Promise<Reply> {
  try {
    return await core.send(call);
  } catch (err) {
    if (err instanceof PlatformHttpError && err.status === 429 && core.o.onCreateRejected) {
      const { reason, limit, ignoredLimit } = classifyCreateRejection(err.bodyExcerpt);
      core.o.onCreateRejected(reason, limit, ignoredLimit);
    }
    throw err;
  }
}

/** The agent's token and version a create, connect or resume answer carries (E2B's spellings first). */
export function agentOf(raw: unknown): { accessToken?: string; envdVersion?: string } {
  if (typeof raw !== "object" || raw === null) return {};
  const obj = raw as Record<string, unknown>;
  const token = obj.envdAccessToken ?? obj.accessToken ?? obj.access_token;
  const version = obj.envdVersion ?? obj.envd_version;
  return {
    ...(typeof token === "string" && token !== "" ? { accessToken: token } : {}),
    ...(typeof version === "string" && version !== "" ? { envdVersion: version } : {}),
  };
}
