// A probe step of the tests' own, declared as a step file in src/probe/steps/ declares one, and
// the registry with it as one more line.
import type { PhaseFn } from "../../src/probe/phase.js";
import { ProbeCheckError } from "../../src/probe/probe-error.js";
import { PROBE_STEPS, type StepRegistry } from "../../src/probe/probe-steps.js";
import { defineStep } from "../../src/probe/step.js";

const MARKER_PATH = "/tmp/sandbox-exporter-marker.txt";

const markerWrite: PhaseFn = async (run, signal) => {
  const sb = run.sandbox;
  if (!sb) throw new Error("no sandbox");
  await run.data.writeFile(sb, MARKER_PATH, `marker ${run.nonce}`, { signal });
};

/** Reads the marker back; `expect` is what it must hold. */
function markerRead(expect: (nonce: string) => string): PhaseFn {
  return async (run, signal) => {
    const sb = run.sandbox;
    if (!sb) throw new Error("no sandbox");
    const got = (await run.data.readFile(sb, MARKER_PATH, { signal })).toString("utf8");
    if (got !== expect(run.nonce)) throw new ProbeCheckError("mismatch", `marker holds ${got}`);
  };
}

/** A step of the test's own, declared as a step file declares one. */
export function markerStep(expect: (nonce: string) => string = (n) => `marker ${n}`) {
  return defineStep({
    name: "marker",
    description: "writes a second file and reads it back",
    phases: ["marker_write", "marker_read"],
    reasons: ["mismatch"],
    needs: { steps: { names: ["file"], why: "writes beside the nonce file" } },
    run: (ctx) =>
      ctx.phases([
        ["marker_write", markerWrite],
        ["marker_read", markerRead(expect)],
      ]),
  });
}

/** The registry with the marker step as one more line, after the file step. */
export function withMarker(step = markerStep()): StepRegistry {
  const at = PROBE_STEPS.findIndex((s) => s.name === "file") + 1;
  return [...PROBE_STEPS.slice(0, at), step, ...PROBE_STEPS.slice(at)];
}
