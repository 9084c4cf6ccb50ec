// Phase create: POST /sandboxes with the probe template, tagged as this instance's probe, secured
// (the agent takes only its access token) as E2B's SDK creates.
import { abortable } from "./abortable.js";
import type { PhaseFn } from "./phase.js";

/** Creates the probe sandbox; a create that outlives the phase is left for terminate to clean up. */
export const createPhase: PhaseFn = async (run, signal) => {
  const { template, metadata, sandboxTtlS } = run.settings;
  const pending = run.control.createSandbox({
    templateId: template,
    timeoutS: sandboxTtlS,
    metadata,
  });
  run.pendingCreate = pending;
  // Marks the call handled: when the phase gives up first, terminate awaits it instead.
  pending.catch(() => undefined);
  const created = await abortable(pending, signal);
  run.pendingCreate = undefined;
  run.sandboxId = created.id;
  run.sandbox = {
    id: created.id,
    ...(created.domain ? { domain: created.domain } : {}),
    ...(created.accessToken ? { accessToken: created.accessToken } : {}),
    // What its agent needs from each request depends on it (a user named below envd 0.4.0).
    ...(created.envdVersion ? { envdVersion: created.envdVersion } : {}),
  };
};
