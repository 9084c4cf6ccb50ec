// The autopause step: the platform pauses the probe sandbox by itself at its timeout (E2B's
// `autoPause`), and a resume (E2B: connect) brings back its file and background process.
// Phases autopause_wait, autopause_resume, autopause_check; the probe never pauses the sandbox nor
// moves its timeout while it waits.
import { DEFAULT_STATES } from "../../../config/shared-settings.js";
import { PlatformNotFoundError } from "../../../platform/http-errors.js";
import { abortable } from "../../abortable.js";
import { type PhaseFn, type ProbeControl, type ProbeRun, probeSandbox } from "../../phase.js";
import { ProbeCheckError } from "../../probe-error.js";
import { GONE_STATES } from "../../terminate.js";
import { probeFileContent } from "../file/file-write.js";
import {
  awaitState,
  notFoundAsLost,
  prepareLifecycle,
  STATE_POLL_MS,
} from "../lifecycle/lifecycle.js";

/** Longest wait between two state reads while waiting for the auto-pause, ms. */
const MAX_WAIT_POLL_MS = 2_000;

/** The autopause step's sandbox timeout, seconds; the config requires it with the step. */
export function autoPauseTimeoutS(run: Pick<ProbeRun, "settings">): number {
  const s = run.settings.autoPauseTimeoutS;
  if (s === undefined) throw new Error("the autopause step ran without autoPauseTimeoutS");
  return s;
}

/**
 * `control` whose create asks for auto-pause with the step's short timeout; `asked` learns whether
 * the platform takes it (false: the step is unsupported there) and when (`monotonic`) the create
 * was sent: the earliest the platform's timeout can have started.
 */
export function askingAutoPause(
  control: ProbeControl,
  timeoutS: number,
  monotonic: () => number,
  asked: (yes: boolean, sentAt: number) => void,
): ProbeControl {
  return {
    createSandbox: async (req) => {
      const sentAt = monotonic();
      // The short timeout goes with auto-pause only: a platform without it keeps the probe's
      // ordinary time to live, or it would kill the sandbox while the other steps run.
      const created = await control.createSandbox({
        ...req,
        autoPause: true,
        autoPauseTimeoutS: timeoutS,
      });
      asked(created.autoPause === true, sentAt);
      return created;
    },
    getSandbox: (id, o) => control.getSandbox(id, o),
    deleteSandbox: (id) => control.deleteSandbox(id),
    listSandboxes: (q) => control.listSandboxes(q),
    pauseSandbox: (id) => control.pauseSandbox(id),
    resumeSandbox: (id, body) => control.resumeSandbox(id, body),
  };
}

/**
 * Before the first wait: writes the nonce file (the file step runs after this step) and starts the
 * lifecycle's background process.
 */
export const prepareAutoPause: PhaseFn = async (run, signal, budgetMs) => {
  await run.data.writeFile(probeSandbox(run), run.settings.filePath, probeFileContent(run), {
    signal,
  });
  await prepareLifecycle(run, signal, budgetMs);
};

/**
 * Reads the sandbox, backing off, until it reports paused in a read sent once the timeout could
 * have passed (a paused read before that is no auto-pause: a state that flaps, or a pause by
 * someone else). Fails `not_auto_paused` when it is gone (killed instead of paused) or still not
 * paused when the next read would cross the phase budget.
 */
export const autoPauseWaitPhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const id = probeSandbox(run).id;
  const paused = new Set(
    (run.settings.states ?? DEFAULT_STATES).paused.map((s) => s.toLowerCase()),
  );
  const begin = run.monotonic();
  // The earliest the platform may pause it: the create or resume that set the timeout, plus it.
  const due = (run.autoPauseTimerFrom ?? begin) + autoPauseTimeoutS(run) * 1000;
  let early = 0;
  let pollMs = run.settings.statePollMs ?? STATE_POLL_MS;
  const notPaused = (what: string, reads: number) =>
    new ProbeCheckError(
      "not_auto_paused",
      `sandbox ${id} ${what} after ${reads} reads in ${Math.round(run.monotonic() - begin)} ms (timeout ${autoPauseTimeoutS(run)} s, auto-pause asked)`,
    );
  for (let reads = 1; ; reads++) {
    let state: string;
    const sentAt = run.monotonic();
    try {
      ({ state } = await abortable(run.control.getSandbox(id), signal));
    } catch (err) {
      if (err instanceof PlatformNotFoundError)
        throw notPaused("is gone (killed, not paused)", reads);
      throw err;
    }
    if (paused.has(state) && sentAt >= due) return;
    if (paused.has(state)) early++;
    if (GONE_STATES.has(state)) throw notPaused(`reports state ${state}, not paused`, reads);
    // Gives up before the phase's own timeout would, with what the platform said last.
    if (run.monotonic() + pollMs >= deadline) {
      const also = early > 0 ? ` (${early} paused reads before its timeout could pass)` : "";
      throw notPaused(`reports state ${state}, not paused${also}`, reads);
    }
    await run.sleep(pollMs, signal);
    pollMs = Math.min(pollMs * 2, MAX_WAIT_POLL_MS);
  }
};

/**
 * Resumes the auto-paused sandbox (E2B: connect, which keeps auto-pause on) with `timeoutS`, then
 * reads it until it runs. The newest agent token, domain and version of the answer are kept.
 */
export function autoPauseResumePhase(timeoutS: (run: ProbeRun) => number): PhaseFn {
  return async (run, signal, budgetMs) => {
    const deadline = run.monotonic() + budgetMs;
    const sb = probeSandbox(run);
    // The resume sets the timeout anew: the next auto-pause is due a timeout after it was sent.
    run.autoPauseTimerFrom = run.monotonic();
    const resumed = await notFoundAsLost(run, "resume after auto-pause", () =>
      abortable(run.control.resumeSandbox(sb.id, { timeout: timeoutS(run) }), signal),
    );
    run.sandbox = {
      ...sb,
      ...(resumed.domain ? { domain: resumed.domain } : {}),
      ...(resumed.accessToken ? { accessToken: resumed.accessToken } : {}),
      ...(resumed.envdVersion ? { envdVersion: resumed.envdVersion } : {}),
    };
    await notFoundAsLost(run, "waiting for running after auto-pause", () =>
      awaitState(run, "running", "not_resumed", signal, deadline),
    );
  };
}

/** A resume before another round: the short timeout again, so the platform pauses it once more. */
export const autoPauseResumeAgain = autoPauseResumePhase(autoPauseTimeoutS);
/** The last round's resume: the probe's own time to live, so later steps are not paused under it. */
export const autoPauseResumeLast = autoPauseResumePhase((run) => run.settings.sandboxTtlS);
