import { Registry } from "prom-client";
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/catalog.js";
import { probeTag } from "../../src/probe/orphan-sweep.js";
import type { ProbeSettings } from "../../src/probe/phase.js";
import { ProbeFamilies, ProbeMetrics } from "../../src/probe/probe-metrics.js";
import type { ProbePhase, ProbeStep } from "../../src/probe/probe-steps.js";
import { type ProbeResult, runProbe } from "../../src/probe/runner.js";
import type { LifecycleFaults } from "../../src/simulator/index.js";
import { testControl } from "../helpers/control.js";
import { startFlappingState } from "./flapping-state.js";
import { INSTANCE, type ProbeBed, probeBed, probeSandboxes, seriesValue } from "./setup.js";

/** The sandbox timeout the probe creates with; the fake clock passes it in a few state reads. */
const TIMEOUT_S = 1;
const POLL_MS = 200;
const STEPS: ProbeStep[] = ["exec", "file", "autopause"];

let bed: ProbeBed;
beforeAll(async () => {
  bed = await probeBed({ flavor: "e2b" });
});
afterEach(() => {
  bed.sim.faults.clear();
});
afterAll(async () => {
  await bed.close();
});

type Probed = ProbeResult & { order: ProbePhase[] };

/**
 * One probe against `b`'s simulator. Waits between state reads move the simulator's clock (and the
 * probe's monotonic clock with it) instead of sleeping, so the sandbox timeout takes no real time.
 */
async function probe(
  b: ProbeBed,
  o: { steps?: ProbeStep[]; onPhase?: (p: ProbePhase) => void } = {},
): Promise<Probed> {
  const order: ProbePhase[] = [];
  const settings: ProbeSettings = {
    template: b.template,
    command: "echo {nonce}",
    filePath: "/tmp/sandbox-exporter-probe.txt",
    metadata: probeTag(INSTANCE),
    sandboxTtlS: 120,
    steps: o.steps ?? STEPS,
    lifecycleRounds: 2,
    autoPauseTimeoutS: TIMEOUT_S,
    statePollMs: POLL_MS,
  };
  const result = await runProbe(
    {
      control: b.control,
      data: b.data,
      clock: b.clock,
      monotonic: () => performance.now() + b.clock.now(),
      nonce: () => "0123456789abcdef",
      onPhase: (phase) => {
        order.push(phase);
        o.onPhase?.(phase);
      },
      sleep: async (ms, signal) => {
        signal.throwIfAborted();
        b.clock.advance(ms);
      },
    },
    settings,
    { phaseTimeoutMs: 5_000, totalTimeoutMs: 30_000 },
  );
  return { ...result, order };
}

function failures(r: ProbeResult): string[][] {
  return r.failures.map((f) => [f.phase, f.reason]);
}

/** Requests the simulator counted for `route`. */
const hits = (route: string): number => bed.sim.counters.get(route);

/** The routes the step must never call, and the connects it makes. */
function calls() {
  return {
    pause: hits("POST /sandboxes/{id}/pause"),
    timeout: hits("POST /sandboxes/{id}/timeout"),
    connect: hits("POST /sandboxes/{id}/connect"),
  };
}

function knobs(k: LifecycleFaults): void {
  bed.sim.faults.lifecycle = { expireSandboxes: true, ...k };
}

describe("the autopause step", () => {
  it("waits for the platform to pause the sandbox by itself, resumes it and checks it, twice", async () => {
    knobs({});
    const before = calls();
    let asked: boolean | undefined;
    const r = await probe(bed, {
      onPhase: (p) => {
        if (p !== "autopause_wait" || asked !== undefined) return;
        const id = probeSandboxes(bed.sim)[0];
        asked = id === undefined ? undefined : bed.sim.state.sandbox(id)?.autoPause;
      },
    });
    expect(failures(r)).toEqual([]);
    expect(r.success).toBe(true);
    expect(asked).toBe(true);
    expect(r.order).toEqual([
      "create",
      "autopause_wait",
      "autopause_resume",
      "autopause_check",
      "autopause_wait",
      "autopause_resume",
      "autopause_check",
      "exec",
      "file_write",
      "file_read",
      "terminate",
    ]);
    expect(r.rounds).toHaveLength(2);
    expect(r.unsupported).toBeUndefined();
    // Paused by the platform alone: no pause, no timeout change; one connect per round.
    const after = calls();
    expect(after.pause - before.pause).toBe(0);
    expect(after.timeout - before.timeout).toBe(0);
    expect(after.connect - before.connect).toBe(2);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails autopause_check with file_lost when the auto-pause loses a recent file (E2B#1104)", async () => {
    knobs({ autoPauseLosesFilesWrittenWithinMs: 60_000 });
    const r = await probe(bed);
    expect(failures(r)).toEqual([["autopause_check", "file_lost"]]);
    expect(r.order.at(-1)).toBe("terminate");
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("fails autopause_wait with not_auto_paused when the platform kills the sandbox instead", async () => {
    knobs({ autoPauseKillsInstead: true });
    const r = await probe(bed);
    expect(failures(r)).toEqual([["autopause_wait", "not_auto_paused"]]);
    expect(r.failures[0]?.message).toMatch(/gone/);
  });

  it("fails autopause_wait with not_auto_paused when the sandbox still runs past timeout and grace", async () => {
    // No timeout enforced: the sandbox keeps running.
    const before = calls();
    const r = await probe(bed);
    expect(failures(r)).toEqual([["autopause_wait", "not_auto_paused"]]);
    expect(r.failures[0]?.message).toMatch(/reports state running, not paused/);
    expect(calls().pause - before.pause).toBe(0);
    expect(calls().timeout - before.timeout).toBe(0);
  });

  it("fails autopause_check with process_lost when the background process does not survive", async () => {
    knobs({ loseProcessesOnResume: true });
    const r = await probe(bed);
    expect(failures(r)).toEqual([["autopause_check", "process_lost"]]);
  });

  it("fails autopause_resume with not_resumed when the sandbox does not come back", async () => {
    knobs({ resumeDelayMs: 60_000 });
    const r = await probe(bed);
    expect(failures(r)).toEqual([["autopause_resume", "not_resumed"]]);
  });

  it("checks with the agent token the connect answered with when the platform rotates it", async () => {
    knobs({ rotateTokenOnResume: true });
    const tokens = new Set<string>();
    const r = await probe(bed, {
      onPhase: () => {
        const id = probeSandboxes(bed.sim)[0];
        const token = id === undefined ? undefined : bed.sim.state.sandbox(id)?.accessToken;
        if (token) tokens.add(token);
      },
    });
    expect(failures(r)).toEqual([]);
    // The create's token and one per connect.
    expect(tokens.size).toBe(3);
  });

  it("feeds the failure to its phase and reason in the probe metrics", async () => {
    knobs({ autoPauseKillsInstead: true });
    const registry = new Registry();
    const families = new ProbeFamilies(registry, { namespace: "sandbox" });
    const id = families.idOf("autopause", bed.template);
    const metrics = new ProbeMetrics(families, id);
    metrics.record(await probe(bed));
    const failed = (phase: string, reason: string) =>
      seriesValue(registry, "sandbox_probe_failures_total", { ...id, phase, reason });
    expect(await failed("autopause_wait", "not_auto_paused")).toBe(1);
    expect(await failed("autopause_check", "file_lost")).toBe(0);
  });
});

describe("the autopause step on a platform whose state reads flap", () => {
  it("takes a paused read only once the timeout could have passed since the create or resume", async () => {
    knobs({});
    const flap = await startFlappingState(bed.sim.apiUrl);
    const control = testControl({
      apiUrl: flap.url,
      apiPrefix: "",
      flavor: "e2b",
      clock: bed.clock,
      dispatcher: new Agent(),
    });
    try {
      // Monotonic ms at each phase's start, on the probe's own clock.
      const at: Array<[ProbePhase, number]> = [];
      const r = await probe(
        { ...bed, control },
        {
          onPhase: (p) => {
            at.push([p, performance.now() + bed.clock.now()]);
            // Flaps only while the step waits: the checks after a resume read the truth.
            flap.flapping = p === "autopause_wait";
          },
        },
      );
      expect(failures(r)).toEqual([]);
      expect(flap.lies).toBeGreaterThan(0);
      const starts = (phase: ProbePhase) => at.filter(([p]) => p === phase).map(([, t]) => t);
      const [create] = starts("create");
      const resumes = starts("autopause_resume");
      expect(resumes).toHaveLength(2);
      // Round 1 from the create, round 2 from the first resume (which set the timeout anew).
      expect(resumes[0]! - create!).toBeGreaterThanOrEqual(TIMEOUT_S * 1000);
      expect(resumes[1]! - resumes[0]!).toBeGreaterThanOrEqual(TIMEOUT_S * 1000);
    } finally {
      await control.close();
      await flap.close();
    }
  });
});

describe("the autopause step on a platform without auto-pause", () => {
  let plain: ProbeBed;
  beforeAll(async () => {
    plain = await probeBed();
  });
  afterAll(async () => {
    await plain.close();
  });

  it("reports the step unsupported, runs the other steps, and fails nothing", async () => {
    plain.sim.faults.lifecycle.expireSandboxes = true;
    // The time to live the sandbox got: the probe's own, not the step's short timeout, or the
    // platform would kill it while the other steps run.
    let ttlS: number | undefined;
    const r = await probe(plain, {
      onPhase: (p) => {
        if (p !== "exec") return;
        const [id] = probeSandboxes(plain.sim);
        const s = plain.sim.state.sandbox(id ?? "");
        if (s) ttlS = (s.endAt - plain.clock.now()) / 1000;
      },
    });
    expect(ttlS).toBe(120);
    expect(r.success).toBe(true);
    expect(r.unsupported).toEqual(["autopause"]);
    expect(r.order).toEqual(["create", "exec", "file_write", "file_read", "terminate"]);
    for (const p of ["autopause_wait", "autopause_resume", "autopause_check"] as const)
      expect(r.phases[p]).toBeUndefined();
    // The metrics say so: the step unsupported (0), the others supported, no failure counted.
    const registry = new Registry();
    const families = new ProbeFamilies(registry, { namespace: "sandbox" });
    const id = families.idOf("autopause", plain.template);
    new ProbeMetrics(families, id).record(r, STEPS);
    const supported = (step: string) =>
      seriesValue(registry, "sandbox_probe_step_supported", { ...id, step });
    expect(await supported("autopause")).toBe(0);
    expect(await supported("file")).toBe(1);
    expect(await seriesValue(registry, "sandbox_probe_success", id)).toBe(1);
  });
});

describe("the autopause module option", () => {
  const parse = (probe: object) => ConfigSchema.safeParse({ probe });

  it("defaults autoPauseTimeoutMs to 15 s and keeps autopause out of the default steps", () => {
    const parsed = parse({ modules: [{ name: "a", phases: ["file", "autopause"] }] });
    expect(parsed.success).toBe(true);
    expect(parsed.data?.probe.modules[0]?.autoPauseTimeoutMs).toBe(15_000);
    expect(parse({}).data?.probe.modules[0]?.steps).not.toContain("autopause");
  });

  it("refuses autopause without file, a timeout not in whole seconds, and a run too short to wait it out", () => {
    const paths = (probe: object) => {
      const r = parse(probe);
      return r.success ? [] : r.error.issues.map((i) => i.path.join("."));
    };
    expect(paths({ modules: [{ name: "a", phases: ["autopause"] }] })).toEqual([
      "probe.modules.0.phases",
    ]);
    expect(
      paths({
        modules: [{ name: "a", phases: ["file", "autopause"], autoPauseTimeoutMs: "1500ms" }],
      }),
    ).toEqual(["probe.modules.0.autoPauseTimeoutMs"]);
    expect(
      paths({
        modules: [
          { name: "a", phases: ["file", "autopause"], autoPauseTimeoutMs: "30s", timeoutMs: "60s" },
        ],
      }),
    ).toEqual(["probe.modules.0.timeoutMs"]);
  });
});
