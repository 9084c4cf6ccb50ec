// Phase file_write: writes the nonce file through the agent's /files endpoint.
import { type PhaseFn, type ProbeRun, probeSandbox } from "../../phase.js";

/** The bytes the probe writes and expects to read back. */
export function probeFileContent(run: ProbeRun): Buffer {
  return Buffer.from(`${run.nonce}\n`, "utf8");
}

/** Writes the probe file. */
export const fileWritePhase: PhaseFn = async (run, signal) => {
  await run.data.writeFile(probeSandbox(run), run.settings.filePath, probeFileContent(run), {
    signal,
  });
};
