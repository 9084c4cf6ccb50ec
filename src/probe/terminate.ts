// Phase terminate: DELETE the probe sandbox (also one whose create answered too late), then GET it.
import type { CreatedSandbox } from "../platform/control/control.js";
import { PlatformNotFoundError } from "../platform/http-errors.js";
import { abortable } from "./abortable.js";
import type { PhaseFn } from "./phase.js";
import { ProbeCheckError } from "./probe-error.js";

/** States a platform may report for a sandbox that is on its way out; as good as a 404. */
export const GONE_STATES: ReadonlySet<string> = new Set([
  "killed",
  "terminated",
  "deleted",
  "dead",
  "stopped",
]);

/**
 * Deletes the probe sandbox and confirms with a GET that it is gone (404). Runs after every probe;
 * without a sandbox (create failed) it has nothing to do.
 */
export const terminatePhase: PhaseFn = async (run, signal) => {
  if (!run.sandbox && run.pendingCreate) {
    const settled = run.pendingCreate.then(
      (c: CreatedSandbox) => c,
      () => undefined,
    );
    const late = await abortable(settled, signal);
    run.pendingCreate = undefined;
    if (late) {
      run.sandbox = { id: late.id };
      run.sandboxId = late.id;
    }
  }
  const id = run.sandbox?.id;
  if (id === undefined) return;
  try {
    await abortable(run.control.deleteSandbox(id), signal);
  } catch (err) {
    // Already gone is what we wanted.
    if (!(err instanceof PlatformNotFoundError)) throw err;
  }
  try {
    // The 404 hoped for is an answer, not an API error (it would fire the error-ratio alert).
    const still = await abortable(run.control.getSandbox(id, { expectGone: true }), signal);
    if (!GONE_STATES.has(still.state)) {
      throw new ProbeCheckError(
        "not_deleted",
        `sandbox ${id} still exists (state ${still.state}) after DELETE`,
      );
    }
  } catch (err) {
    if (!(err instanceof PlatformNotFoundError)) throw err;
  }
  run.sandbox = undefined;
};
