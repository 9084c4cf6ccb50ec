// Probe steps as plug-ins: a step declared in one file and listed in the registry runs in the
// registry's place for it, whatever order a module lists its steps in.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeTag } from "../../src/probe/orphan-sweep.js";
import type { ProbeSettings } from "../../src/probe/phase.js";
import {
  type ProbePhase,
  type ProbeStep,
  phaseNames,
  type StepRegistry,
} from "../../src/probe/probe-steps.js";
import { type ProbeResult, runProbe } from "../../src/probe/runner.js";
import { markerStep, withMarker } from "./marker-step.js";
import { INSTANCE, type ProbeBed, probeBed, probeSandboxes } from "./setup.js";

let bed: ProbeBed;
beforeAll(async () => {
  bed = await probeBed();
});
afterAll(async () => {
  await bed.close();
});

async function probe(
  steps: StepRegistry,
  listed: string[],
): Promise<ProbeResult & { order: ProbePhase[] }> {
  const order: ProbePhase[] = [];
  const settings: ProbeSettings = {
    template: bed.template,
    command: "echo {nonce}",
    filePath: "/tmp/sandbox-exporter-probe.txt",
    metadata: probeTag(INSTANCE),
    sandboxTtlS: 120,
    steps: listed as ProbeStep[],
    lifecycleRounds: 1,
  };
  const result = await runProbe(
    {
      control: bed.control,
      data: bed.data,
      clock: bed.clock,
      monotonic: () => performance.now(),
      nonce: () => "0123456789abcdef",
      onPhase: (p) => order.push(p),
      steps,
    },
    settings,
    { phaseTimeoutMs: 5_000, totalTimeoutMs: 20_000 },
  );
  return { ...result, order };
}

describe("a step added by its file and one registry line", () => {
  it("runs in the registry's order, not the order the module lists", async () => {
    const r = await probe(withMarker(), ["marker", "file", "exec"]);
    expect(r.failures).toEqual([]);
    expect(r.order).toEqual([
      "create",
      "exec",
      "file_write",
      "file_read",
      "marker_write",
      "marker_read",
      "terminate",
    ]);
    expect(Object.keys(r.phases)).toContain("marker_read");
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("stops the run at its failure, with its reason, and still terminates", async () => {
    const r = await probe(withMarker(markerStep(() => "something else")), [
      "exec",
      "file",
      "marker",
      "lifecycle",
    ]);
    expect(r.failures.map((f) => [f.phase, f.reason])).toEqual([["marker_read", "mismatch"]]);
    expect(r.order).toEqual([
      "create",
      "exec",
      "file_write",
      "file_read",
      "marker_write",
      "marker_read",
      "terminate",
    ]);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("adds its phases, in run order, to the phase names", () => {
    expect(phaseNames(withMarker())).toEqual([
      "create",
      "autopause_wait",
      "autopause_resume",
      "autopause_check",
      "exec",
      "file_write",
      "file_read",
      "marker_write",
      "marker_read",
      "http_wait_ready",
      "http_request",
      "autoresume_pause",
      "autoresume_wake",
      "autoresume_check",
      "pause",
      "resume",
      "state_check",
      "terminate",
    ]);
  });
});
