// The autoresume step: a sandbox created with auto-resume (E2B's `autoResume: {enabled: true}`) is
// paused, then woken by a request to its service's port alone, never by connect or resume (infra
// #1862; #2196 fixed traffic reaching a sandbox still pausing). Phases autoresume_pause,
// autoresume_wake (the waking request; its time is the wake histogram's once the service answered)
// and autoresume_check.
import { DataPlaneError, PlatformTimeoutError } from "../../../platform/http-errors.js";
import { type PhaseFn, type ProbeRun, probeSandbox } from "../../phase.js";
import { ProbeCheckError } from "../../probe-error.js";
import { autoPauseWaitPhase } from "../autopause/autopause.js";
import { expectCleanExit, runCommand } from "../exec/exec.js";
import {
  checkServiceAnswer,
  describeAnswer,
  httpSettings,
  httpWaitReadyPhase,
  proxyAnswer,
  requestService,
  servedFile,
} from "../http/http.js";
import { awaitState, notFoundAsLost } from "../lifecycle/lifecycle.js";
import { pausePhase } from "../lifecycle/pause.js";

/** The waking request gives up this long before the phase would, to say wake_timeout itself. */
const WAKE_MARGIN_MS = 1_000;

/**
 * Before the pause: the service runs and answers (the http step's, or started here), so what the
 * wake brings back is known to have been there.
 */
export const prepareAutoResume: PhaseFn = async (run, signal, budgetMs) => {
  if (run.servicePid === undefined) await httpWaitReadyPhase(run, signal, budgetMs);
};

/**
 * Pauses the sandbox: by the API (and reads until it says paused), or, when the module runs the
 * autopause step, by waiting for the platform to pause it at its timeout.
 */
export const autoResumePausePhase: PhaseFn = async (run, signal, budgetMs) => {
  if (run.settings.steps.includes("autopause")) await autoPauseWaitPhase(run, signal, budgetMs);
  else await pausePhase(run, signal, budgetMs);
};

/**
 * Requests the paused sandbox's port, and nothing else: the answer must be the service's, with the
 * nonce. The proxy's paused or not-found answer is not_auto_resumed; a closed port after the wake
 * is process_lost (the service answered before the pause); no answer in time is wake_timeout.
 */
export const autoResumeWakePhase: PhaseFn = async (run, signal, budgetMs) => {
  const h = httpSettings(run);
  const id = probeSandbox(run).id;
  const limit = Math.max(1, budgetMs - Math.min(WAKE_MARGIN_MS, budgetMs / 4));
  const begin = run.monotonic();
  let a: Awaited<ReturnType<typeof requestService>>;
  try {
    a = await requestService(run, signal, limit);
  } catch (err) {
    if (err instanceof PlatformTimeoutError && !signal.aborted)
      throw new ProbeCheckError(
        "wake_timeout",
        `the paused sandbox ${id} did not answer on port ${h.port} within ${Math.round(limit)} ms`,
      );
    throw err;
  }
  const wakeSeconds = (run.monotonic() - begin) / 1000;
  const proxy = proxyAnswer(a, id, h.port);
  if (proxy === "not_found" || proxy === "paused" || proxy === "transitioning")
    throw new ProbeCheckError(
      "not_auto_resumed",
      `traffic did not wake the paused sandbox ${id}: the proxy answered ${describeAnswer(a)}`,
    );
  if (proxy === "port_closed")
    throw new ProbeCheckError(
      "process_lost",
      `the sandbox woke but nothing listens on port ${h.port} any more (${describeAnswer(a)})`,
    );
  try {
    checkServiceAnswer(run, a, "the waking request");
  } catch (err) {
    // A service that answers without its file lost the file.
    if (err instanceof ProbeCheckError) await expectServedFile(run, signal);
    throw err;
  }
  // Only a wake the service answered is a wake: the proxy's refusals come back in milliseconds.
  run.wakeSeconds = wakeSeconds;
};

/**
 * After the wake, without connect: the platform reads the sandbox as running, the served file and
 * the service process are intact, and the port answers the nonce again.
 */
export const autoResumeCheckPhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const left = () => deadline - run.monotonic();
  await notFoundAsLost(run, "reading the woken sandbox", () =>
    awaitState(run, "running", "not_auto_resumed", signal, deadline),
  );
  await expectServedFile(run, signal);
  const pid = run.servicePid;
  if (pid === undefined) throw new Error("autoresume_check ran before the service started");
  const alive = await runCommand(run, `kill -0 ${pid}`, signal, left());
  if (alive.end.error === undefined && alive.end.exitCode !== 0)
    throw new ProbeCheckError(
      "process_lost",
      `the HTTP service (pid ${pid}) is gone after the wake (kill -0 exited ${alive.end.exitCode})`,
    );
  expectCleanExit("kill -0", alive.end);
  checkServiceAnswer(run, await requestService(run, signal, left()), "the request after the wake");
};

/** Throws file_lost unless the served file still holds the nonce. */
async function expectServedFile(run: ProbeRun, signal: AbortSignal): Promise<void> {
  const path = servedFile(httpSettings(run));
  let got: Buffer;
  try {
    got = await run.data.readFile(probeSandbox(run), path, { signal });
  } catch (err) {
    if (err instanceof DataPlaneError && err.status === 404)
      throw new ProbeCheckError("file_lost", `${path} is gone after the wake (${err.message})`);
    throw err;
  }
  if (got.toString("utf8") !== `${run.nonce}\n`)
    throw new ProbeCheckError("file_lost", `${path} no longer holds the nonce after the wake`);
}
