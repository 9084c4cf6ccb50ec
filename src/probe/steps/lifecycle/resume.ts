// Phase resume: POST /sandboxes/{id}/resume (E2B: connect), then reads the sandbox until it runs.
import { abortable } from "../../abortable.js";
import { type PhaseFn, probeSandbox } from "../../phase.js";
import { awaitState, notFoundAsLost } from "./lifecycle.js";

/**
 * Resumes the probe sandbox with the time to live it was created with (E2B gives a sandbox resumed
 * without one 15 s), and passes once a read reports it running, within the phase's budget.
 */
export const resumePhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const sb = probeSandbox(run);
  const resumed = await notFoundAsLost(run, "resume", () =>
    abortable(run.control.resumeSandbox(sb.id, { timeout: run.settings.sandboxTtlS }), signal),
  );
  // A resumed sandbox may come back behind another data-plane domain, with a new agent token (the
  // newest the platform gave is the one it checks) or agent version; what the answer omits stays.
  run.sandbox = {
    ...sb,
    ...(resumed.domain ? { domain: resumed.domain } : {}),
    ...(resumed.accessToken ? { accessToken: resumed.accessToken } : {}),
    ...(resumed.envdVersion ? { envdVersion: resumed.envdVersion } : {}),
  };
  await notFoundAsLost(run, "waiting for running", () =>
    awaitState(run, "running", "not_resumed", signal, deadline),
  );
};
