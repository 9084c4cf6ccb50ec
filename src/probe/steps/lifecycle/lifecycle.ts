// What the lifecycle phases (pause, resume, state_check) share: the background process that must
// survive every pause, the bounded wait for a state, and a 404 read as "the sandbox is gone".
import { DEFAULT_STATES } from "../../../config/shared-settings.js";
import { PlatformNotFoundError } from "../../../platform/http-errors.js";
import { abortable } from "../../abortable.js";
import { type LifecycleStates, type PhaseFn, type ProbeRun, probeSandbox } from "../../phase.js";
import { type FailureReason, ProbeCheckError } from "../../probe-error.js";
import { GONE_STATES } from "../../terminate.js";
import { expectCleanExit, runCommand } from "../exec/exec.js";
import { probeFileContent } from "../file/file-write.js";

/** Default ms between two reads of the sandbox while waiting for it to be paused or running. */
export const STATE_POLL_MS = 200;
/** The background process sleeps at least this long, seconds (and never less than the sandbox lives). */
const MARKER_MIN_S = 600;
const SHOWN_OUTPUT_CHARS = 60;

/**
 * The command that starts the background process and prints its pid. Every stream of the child is
 * redirected: on envd a background child holding stdout keeps the Start stream open until it exits.
 */
export function markerCommand(run: ProbeRun): string {
  const seconds = Math.max(MARKER_MIN_S, Math.ceil(run.settings.sandboxTtlS));
  return `sleep ${seconds} >/dev/null 2>&1 </dev/null & echo $!`;
}

/**
 * Gets the sandbox ready for its first pause: starts the background process and remembers its pid.
 * The nonce file is the one file_write wrote; without the file step, it writes it here.
 */
export const prepareLifecycle: PhaseFn = async (run, signal, budgetMs) => {
  if (!run.settings.steps.includes("file")) {
    await run.data.writeFile(probeSandbox(run), run.settings.filePath, probeFileContent(run), {
      signal,
    });
  }
  const { end, stdout } = await runCommand(run, markerCommand(run), signal, budgetMs);
  expectCleanExit("starting the background process", end);
  const text = stdout.trim();
  const pid = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(pid) || pid <= 0) {
    throw new ProbeCheckError(
      "wrong_output",
      `starting the background process printed no pid: got ${JSON.stringify(stdout.slice(0, SHOWN_OUTPUT_CHARS))}`,
    );
  }
  run.markerPid = pid;
};

/**
 * Reads the sandbox until it reports a state of `which` (settings.states). Fails with `reason` when
 * a read reports a state it cannot leave, or when waiting `statePollMs` more would cross `deadline`
 * (monotonic ms): the phase then ends with what the platform said, before its timeout takes over.
 */
export async function awaitState(
  run: ProbeRun,
  which: keyof LifecycleStates,
  reason: FailureReason,
  signal: AbortSignal,
  deadline: number,
): Promise<void> {
  const id = probeSandbox(run).id;
  const pollMs = run.settings.statePollMs ?? STATE_POLL_MS;
  const wanted = new Set(
    (run.settings.states ?? DEFAULT_STATES)[which].map((s) => s.toLowerCase()),
  );
  const begin = run.monotonic();
  for (let reads = 1; ; reads++) {
    // The normalizer lower-cases states.
    const { state } = await abortable(run.control.getSandbox(id), signal);
    if (wanted.has(state)) return;
    if (GONE_STATES.has(state) || run.monotonic() + pollMs >= deadline) {
      const waited = Math.round(run.monotonic() - begin);
      throw new ProbeCheckError(
        reason,
        `sandbox ${id} reports state ${state}, not ${which}, after ${reads} reads in ${waited} ms`,
      );
    }
    await run.sleep(pollMs, signal);
  }
}

/**
 * Runs a control-plane step of a lifecycle phase; a 404 becomes `not_found`: the platform lost a
 * sandbox it had just paused (or never kept it), which no status code alone says.
 */
export async function notFoundAsLost<T>(
  run: ProbeRun,
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof PlatformNotFoundError)) throw err;
    throw new ProbeCheckError(
      "not_found",
      `${what}: sandbox ${probeSandbox(run).id} not found (${err.message})`,
    );
  }
}
