import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SandboxRef } from "../../src/platform/data/data.js";
import { probeTag } from "../../src/probe/orphan-sweep.js";
import type { ProbeControl, ProbeData, ProbeSettings } from "../../src/probe/phase.js";
import { PROBE_PHASES, type ProbePhase, type ProbeStep } from "../../src/probe/probe-steps.js";
import { type ProbeResult, type RunnerLimits, runProbe } from "../../src/probe/runner.js";
import type { LifecycleFaults } from "../../src/simulator/index.js";
import { INSTANCE, type ProbeBed, probeBed, probeSandboxes } from "./setup.js";

const POLL_MS = 200;
const LIFECYCLE = ["pause", "resume", "state_check"] as const;
const ALL_STEPS: ProbeStep[] = ["exec", "file", "lifecycle"];

let bed: ProbeBed;
beforeAll(async () => {
  bed = await probeBed();
});
afterEach(() => {
  bed.sim.faults.clear();
});
afterAll(async () => {
  await bed.close();
});

interface LifecycleRun {
  steps?: ProbeStep[];
  rounds?: number;
  limits?: Partial<RunnerLimits>;
  control?: Partial<ProbeControl>;
  data?: Partial<ProbeData>;
  signal?: AbortSignal;
  /** Called as each phase starts, with the simulator's view of the probe sandbox's state. */
  onPhase?: (phase: ProbePhase) => void;
}

/** A probe's result and the phases in the order they started. */
type Probed = ProbeResult & { order: ProbePhase[] };

/**
 * One probe against `b`'s simulator. Waits between state reads move the simulator's clock instead
 * of sleeping, and the probe's monotonic clock moves with it, so slow pauses take no real time.
 */
async function probe(b: ProbeBed, o: LifecycleRun = {}): Promise<Probed> {
  const order: ProbePhase[] = [];
  const settings: ProbeSettings = {
    template: b.template,
    command: "echo {nonce}",
    filePath: "/tmp/sandbox-exporter-probe.txt",
    metadata: probeTag(INSTANCE),
    sandboxTtlS: 120,
    steps: o.steps ?? ALL_STEPS,
    lifecycleRounds: o.rounds ?? 2,
    statePollMs: POLL_MS,
  };
  const result = await runProbe(
    {
      control: { ...bind<ProbeControl>(b.control), ...o.control } as ProbeControl,
      data: { ...bind<ProbeData>(b.data), ...o.data } as ProbeData,
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
    { phaseTimeoutMs: 5_000, totalTimeoutMs: 30_000, ...o.limits },
    o.signal,
  );
  return { ...result, order };
}

/** The probe client's methods, bound, as a plain object whose members a test may replace. */
function bind<T extends object>(client: T): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.getOwnPropertyNames(Object.getPrototypeOf(client))) {
    const v = (client as Record<string, unknown>)[key];
    if (typeof v === "function" && key !== "constructor") out[key] = v.bind(client);
  }
  return out as T;
}

function failures(r: ProbeResult): string[][] {
  return r.failures.map((f) => [f.phase, f.reason]);
}

/** Terminate ran and deleted the probe sandbox: the simulator holds no probe sandbox. */
function expectCleanedUp(r: Probed): void {
  expect(r.phases.terminate).toBeDefined();
  expect(r.order.at(-1)).toBe("terminate");
  expect(r.leftBehind).toBeUndefined();
  expect(probeSandboxes(bed.sim)).toEqual([]);
}

function counts(): { pause: number; resume: number; delete: number; start: number } {
  const c = bed.sim.counters;
  return {
    pause: c.get("POST /sandboxes/{id}/pause"),
    resume: c.get("POST /sandboxes/{id}/resume"),
    delete: c.get("DELETE /sandboxes/{id}"),
    start: c.get("POST /process.Process/Start"),
  };
}

function since(before: ReturnType<typeof counts>): ReturnType<typeof counts> {
  const now = counts();
  return {
    pause: now.pause - before.pause,
    resume: now.resume - before.resume,
    delete: now.delete - before.delete,
    start: now.start - before.start,
  };
}

describe("the lifecycle phases", () => {
  it("run two rounds of pause, resume and state_check after the file round trip, then terminate", async () => {
    const before = counts();
    const r = await probe(bed);
    expect(failures(r)).toEqual([]);
    expect(r.success).toBe(true);
    expect(r.order).toEqual([
      "create",
      "exec",
      "file_write",
      "file_read",
      ...LIFECYCLE,
      ...LIFECYCLE,
      "terminate",
    ]);
    expect(Object.keys(r.phases).sort()).toEqual(
      PROBE_PHASES.filter((p) => !/^(autopause|autoresume|http)_/.test(p)).sort(),
    );
    expect(r.rounds).toHaveLength(2);
    for (const round of r.rounds ?? []) {
      expect(Object.keys(round).sort()).toEqual([...LIFECYCLE].sort());
      for (const phase of LIFECYCLE) expect(round[phase]).toBeGreaterThanOrEqual(0);
    }
    // The last round's durations are the phases' values.
    for (const phase of LIFECYCLE) expect(r.phases[phase]).toBe(r.rounds?.[1]?.[phase]);
    // exec, the background process, then an echo and a kill -0 in each round.
    expect(since(before)).toEqual({ pause: 2, resume: 2, delete: 1, start: 6 });
    expectCleanedUp(r);
  });

  it("runs as many rounds as configured", async () => {
    const before = counts();
    const r = await probe(bed, { rounds: 3 });
    expect(r.success).toBe(true);
    expect(r.rounds).toHaveLength(3);
    expect(since(before)).toMatchObject({ pause: 3, resume: 3 });
    const one = await probe(bed, { rounds: 1 });
    expect(one.order.filter((p) => p === "pause")).toHaveLength(1);
    expectCleanedUp(one);
  });

  it("do not run, nor report rounds, without the lifecycle step", async () => {
    const before = counts();
    const r = await probe(bed, { steps: ["exec", "file"] });
    expect(r.success).toBe(true);
    expect(r.order).toEqual(["create", "exec", "file_write", "file_read", "terminate"]);
    expect(r.rounds).toBeUndefined();
    expect(since(before)).toMatchObject({ pause: 0, resume: 0 });
  });

  it("write the nonce file themselves when the file step is not configured", async () => {
    const r = await probe(bed, { steps: ["lifecycle"] });
    expect(failures(r)).toEqual([]);
    expect(r.order).toEqual(["create", ...LIFECYCLE, ...LIFECYCLE, "terminate"]);
    expectCleanedUp(r);
  });

  it("pause: waits, reading the sandbox, until it reports paused", async () => {
    bed.sim.faults.lifecycle = { pauseDelayMs: 1_000 };
    const reads = bed.sim.counters.get("GET /sandboxes/{id}");
    const r = await probe(bed, { rounds: 1 });
    expect(failures(r)).toEqual([]);
    // Reads 200 ms apart on the simulator's clock: running five times, then paused.
    expect(r.phases.pause).toBeGreaterThanOrEqual(1);
    // Six reads while pausing, one while resuming, one by terminate.
    expect(bed.sim.counters.get("GET /sandboxes/{id}") - reads).toBe(8);
    expectCleanedUp(r);
  });

  it("resume: waits, reading the sandbox, until it reports running", async () => {
    bed.sim.faults.lifecycle = { resumeDelayMs: 600 };
    const r = await probe(bed, { rounds: 1 });
    expect(failures(r)).toEqual([]);
    expect(r.phases.resume).toBeGreaterThanOrEqual(0.6);
    expectCleanedUp(r);
  });

  it("resume: asks for the time to live the sandbox was created with", async () => {
    const bodies: object[] = [];
    const r = await probe(bed, {
      rounds: 1,
      control: {
        resumeSandbox: (id, body) => {
          bodies.push(body ?? {});
          return bed.control.resumeSandbox(id, body);
        },
      },
    });
    expect(r.success).toBe(true);
    expect(bodies).toEqual([{ timeout: 120 }]);
  });

  it("resume: sends later data calls to the domain the resumed sandbox answers with", async () => {
    const domains: Array<string | undefined> = [];
    // The simulator serves one domain: the data calls are recorded, then sent where it listens.
    const real = (sb: SandboxRef): SandboxRef => {
      domains.push(sb.domain);
      return { ...sb, domain: bed.sim.domain };
    };
    const r = await probe(bed, {
      rounds: 1,
      control: {
        resumeSandbox: async (id, body) => ({
          ...(await bed.control.resumeSandbox(id, body)),
          domain: "moved.example",
        }),
      },
      data: {
        readFile: (sb, path, opts) => bed.data.readFile(real(sb), path, opts),
        writeFile: (sb, path, content, opts) => bed.data.writeFile(real(sb), path, content, opts),
        startProcess: (sb, input, opts) => bed.data.startProcess(real(sb), input, opts),
      },
    });
    expect(r.success).toBe(true);
    // exec, file_write, file_read, the background process; then the state check's three calls.
    expect(domains.slice(0, 4)).toEqual(Array(4).fill(bed.sim.domain));
    expect(domains.slice(4)).toEqual(Array(3).fill("moved.example"));
  });

  it("state_check: finds the nonce file, the background process and a new echo after each resume", async () => {
    const scripts: string[] = [];
    const r = await probe(bed, {
      rounds: 1,
      data: {
        startProcess: (sb, input, opts) => {
          scripts.push(input.args?.at(-1) ?? "");
          return bed.data.startProcess(sb, input, opts);
        },
      },
    });
    expect(r.success).toBe(true);
    expect(scripts).toEqual([
      "echo 0123456789abcdef",
      "sleep 600 >/dev/null 2>&1 </dev/null & echo $!",
      "echo 0123456789abcdef",
      expect.stringMatching(/^kill -0 \d+$/),
    ]);
    expect(r.phases.state_check).toBeGreaterThan(0);
  });
});

describe("a failed lifecycle", () => {
  const cases: Array<{
    name: string;
    phase: ProbePhase;
    reason: string;
    faults: LifecycleFaults;
    limits?: Partial<RunnerLimits>;
    /** Lifecycle rounds that started. */
    rounds: number;
  }> = [
    {
      name: "a pause the sandbox never shows",
      phase: "pause",
      reason: "not_paused",
      faults: { stayRunningAfterPause: true },
      limits: { phaseTimeouts: { pause: 2_000 } },
      rounds: 1,
    },
    {
      name: "a sandbox that stays paused after resume",
      phase: "resume",
      reason: "not_resumed",
      faults: { resumeDelayMs: 3_600_000 },
      limits: { phaseTimeouts: { resume: 2_000 } },
      rounds: 1,
    },
    {
      name: "a resume that loses the files",
      phase: "state_check",
      reason: "file_lost",
      faults: { loseFilesOnResume: true },
      rounds: 1,
    },
    {
      name: "a resume that loses the background process",
      phase: "state_check",
      reason: "process_lost",
      faults: { loseProcessesOnResume: true },
      rounds: 1,
    },
    {
      name: "a second resume answering 500",
      phase: "resume",
      reason: "http_status",
      faults: { failResumeFrom: 2 },
      rounds: 2,
    },
    {
      name: "a sandbox the platform lost at pause (404)",
      phase: "pause",
      reason: "not_found",
      faults: { notFoundAfterPause: true },
      rounds: 1,
    },
  ];

  for (const c of cases) {
    it(`reports ${c.phase}/${c.reason} for ${c.name}, then terminates`, async () => {
      bed.sim.faults.lifecycle = c.faults;
      const r = await probe(bed, c.limits ? { limits: c.limits } : {});
      expect(r.success).toBe(false);
      expect(failures(r)).toEqual([[c.phase, c.reason]]);
      expect(r.failures[0]?.message).not.toBe("");
      expect(r.phases[c.phase]).toBeGreaterThanOrEqual(0);
      expect(r.rounds).toHaveLength(c.rounds);
      expect(r.rounds?.at(-1)?.[c.phase]).toBe(r.phases[c.phase]);
      expect(r.order.filter((p) => p === c.phase)).toHaveLength(c.rounds);
      expectCleanedUp(r);
    });
  }

  it("deletes a sandbox left paused by a failed second resume", async () => {
    bed.sim.faults.lifecycle = { failResumeFrom: 2 };
    let atTerminate: string | undefined;
    const r = await probe(bed, {
      onPhase: (phase) => {
        const id = probeSandboxes(bed.sim)[0];
        if (phase === "terminate" && id) atTerminate = bed.sim.state.sandbox(id)?.state;
      },
    });
    expect(failures(r)).toEqual([["resume", "http_status"]]);
    expect(r.failures[0]?.message).toContain("500");
    expect(r.rounds?.[1]).not.toHaveProperty("state_check");
    expect(atTerminate).toBe("paused");
    expectCleanedUp(r);
  });

  it("names the state the sandbox kept reporting when it never paused", async () => {
    bed.sim.faults.lifecycle = { stayRunningAfterPause: true };
    const r = await probe(bed, { limits: { phaseTimeouts: { pause: 1_000 } } });
    expect(r.failures[0]?.message).toMatch(/reports state running, not paused, after \d+ reads/);
  });

  it("ends the wait within what is left of the total timeout", async () => {
    bed.sim.faults.lifecycle = { pauseDelayMs: 3_600_000 };
    const r = await probe(bed, { limits: { totalTimeoutMs: 4_000 } });
    expect(failures(r)).toEqual([["pause", "not_paused"]]);
    expectCleanedUp(r);
  });

  it("is aborted by shutdown mid-round, and the paused sandbox is still deleted", async () => {
    const stop = new AbortController();
    const r = await probe(bed, {
      signal: stop.signal,
      onPhase: (phase) => {
        if (phase === "resume") stop.abort(new Error("shutting down"));
      },
    });
    expect(failures(r)).toEqual([["resume", "aborted"]]);
    expectCleanedUp(r);
  });

  it("reports a background process that printed no pid before the first pause", async () => {
    bed.sim.faults.stream = { wrongStdout: true };
    const r = await probe(bed, { steps: ["file", "lifecycle"] });
    expect(failures(r)).toEqual([["pause", "wrong_output"]]);
    expect(r.failures[0]?.message).toMatch(/^before the first pause: .*no pid/);
    // Starting it is not a pause: no duration, no round.
    expect(r.phases.pause).toBeUndefined();
    expect(r.rounds).toBeUndefined();
    expectCleanedUp(r);
  });
});

describe("the lifecycle against E2B", () => {
  let e2b: ProbeBed;
  beforeAll(async () => {
    e2b = await probeBed({ flavor: "e2b" });
  });
  afterAll(async () => {
    await e2b.close();
  });

  it("resumes through connect, twice, and deletes the sandbox", async () => {
    const r = await probe(e2b);
    expect(failures(r)).toEqual([]);
    expect(e2b.sim.counters.get("POST /sandboxes/{id}/connect")).toBe(2);
    expect(e2b.sim.counters.get("POST /sandboxes/{id}/resume")).toBe(0);
    expect(probeSandboxes(e2b.sim)).toEqual([]);
  });

  it("reports a second connect answering 500 and still deletes the paused sandbox", async () => {
    e2b.sim.faults.lifecycle = { failResumeFrom: 2 };
    const r = await probe(e2b);
    expect(failures(r)).toEqual([["resume", "http_status"]]);
    expect(r.leftBehind).toBeUndefined();
    expect(probeSandboxes(e2b.sim)).toEqual([]);
  });
});
