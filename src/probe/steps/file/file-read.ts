// Phase file_read: reads the probe file back and compares it with what file_write wrote.

import { type PhaseFn, probeSandbox } from "../../phase.js";
import { ProbeCheckError } from "../../probe-error.js";
import { probeFileContent } from "./file-write.js";

/** Reads the probe file; passes only when the bytes are exactly the ones written. */
export const fileReadPhase: PhaseFn = async (run, signal) => {
  const expected = probeFileContent(run);
  const got = await run.data.readFile(probeSandbox(run), run.settings.filePath, { signal });
  if (!got.equals(expected)) {
    throw new ProbeCheckError(
      "mismatch",
      `file read back differs from the one written: ${got.byteLength} bytes, expected ${expected.byteLength}`,
    );
  }
};
