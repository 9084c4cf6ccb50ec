// Phase state_check: after a resume, the nonce file, the background process and a new command.
import { DataPlaneError } from "../../../platform/http-errors.js";
import { type PhaseFn, probeSandbox } from "../../phase.js";
import { ProbeCheckError } from "../../probe-error.js";
import { expectCleanExit, expectOutput, runCommand } from "../exec/exec.js";
import { probeFileContent } from "../file/file-write.js";

/**
 * Passes when the nonce file still holds the nonce, a new `echo` prints it, and the background
 * process started before the first pause is still alive (`kill -0`).
 */
export const stateCheckPhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const left = () => deadline - run.monotonic();
  const path = run.settings.filePath;
  let got: Buffer;
  try {
    got = await run.data.readFile(probeSandbox(run), path, { signal });
  } catch (err) {
    if (err instanceof DataPlaneError && err.status === 404)
      throw new ProbeCheckError("file_lost", `${path} is gone after resume (${err.message})`);
    throw err;
  }
  const expected = probeFileContent(run);
  if (!got.equals(expected)) {
    throw new ProbeCheckError(
      "file_lost",
      `${path} no longer holds the nonce after resume: ${got.byteLength} bytes, expected ${expected.byteLength}`,
    );
  }

  const echo = await runCommand(run, `echo ${run.nonce}`, signal, left());
  expectCleanExit("echo after resume", echo.end);
  expectOutput("echo after resume", echo.stdout, run.nonce);

  const pid = run.markerPid;
  if (pid === undefined) throw new Error("state_check ran before the background process started");
  const alive = await runCommand(run, `kill -0 ${pid}`, signal, left());
  if (alive.end.error === undefined && alive.end.exitCode !== 0) {
    throw new ProbeCheckError(
      "process_lost",
      `background process ${pid}, started before the first pause, is gone (kill -0 exited ${alive.end.exitCode})`,
    );
  }
  expectCleanExit("kill -0", alive.end);
};
