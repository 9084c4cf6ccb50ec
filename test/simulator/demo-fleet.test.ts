// The demo's platform is healthy unless asked for faults: its churn kills on request only and never
// an API-created (probe) sandbox, its replacements keep the fleet's metadata, its node list never
// fails; `--faults` brings the orphaned kills and the 503s back.
import { afterEach, describe, expect, it } from "vitest";
import {
  DEMO_KEY,
  demoSimulatorOptions,
  logWork,
  startDemoSimulator,
} from "../../src/simulator/demo-setup.js";
import { Churn, SimState, type Simulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { PREFIX } from "./helpers.js";

/** Ten minutes of the demo's churn (one tick every 2 s). */
const TICKS = 300;

/** The demo's fleet as E2B's, on a fake clock, without servers. */
function demoState(): SimState {
  const o = demoSimulatorOptions(true);
  return new SimState({
    seed: 1,
    sandboxes: o.sandboxes ?? 300,
    templates: o.templates ?? 5,
    nodes: o.nodes ?? 4,
    logLinesPerSandbox: 5,
    clock: new FakeClock(Date.parse("2026-01-01T00:00:00Z")),
  });
}

/** Kill reasons of `ticks` churn ticks of the demo's E2B churn, with or without faults. */
function killReasons(faults: boolean, ticks = TICKS): string[] {
  const state = demoState();
  const churn = demoSimulatorOptions(true, faults).churn;
  if (!churn) throw new Error("the E2B demo churns");
  const c = new Churn(state, churn, 1);
  const reasons: string[] = [];
  state.onLifecycle((e) => {
    if (e.type === "killed") reasons.push(e.killReason ?? "");
  });
  for (let i = 0; i < ticks; i++) c.tick();
  return reasons;
}

describe("the demo's churn", () => {
  it("kills on request only by default: no orphaned kill, nothing an alert is about", () => {
    const reasons = killReasons(false);
    expect(reasons).toHaveLength(TICKS);
    expect(new Set(reasons)).toEqual(new Set(["request"]));
  });

  it("orphans one kill in 10 with --faults", () => {
    const reasons = killReasons(true);
    expect(reasons.filter((r) => r === "orphaned")).toHaveLength(TICKS / 10);
  });

  it("has no churn on the sandboxapi flavor", () => {
    expect(demoSimulatorOptions(false).churn).toBeUndefined();
    expect(demoSimulatorOptions(false, true).churn).toBeUndefined();
  });

  it("never kills a sandbox created through the API, as a probe's is", () => {
    const state = demoState();
    const c = new Churn(state, { everyMs: 2_000 }, 1);
    // Created after the churn started, as the API's create does: probes' sandboxes.
    const probes = Array.from({ length: 20 }, () =>
      state.addSandbox({ metadata: { "sandbox-exporter/probe": "demo" } }),
    );
    for (let i = 0; i < TICKS; i++) c.tick();
    expect(probes.filter((p) => state.sandbox(p.sandboxID)?.state !== "running")).toEqual([]);
  });

  it("replaces what it kills with the fleet's metadata, so the policy's candidates stay", () => {
    const state = demoState();
    const c = new Churn(state, { everyMs: 2_000 }, 1);
    const devNoOwner = (): number =>
      [...state.sandboxes.values()].filter(
        (s) => s.state === "running" && s.metadata.env === "dev" && s.metadata.owner === undefined,
      ).length;
    const before = devNoOwner();
    for (let i = 0; i < TICKS; i++) c.tick();
    // Most of the running fleet was replaced; the candidates' count is about the same.
    expect(before).toBeGreaterThan(20);
    expect(devNoOwner()).toBeGreaterThan(before * 0.6);
    expect(devNoOwner()).toBeLessThan(before * 1.6);
  });
});

describe("the demo's work", () => {
  it("logs a line in every running sandbox but the quiet ones", () => {
    const state = demoState();
    const [quiet, active] = [...state.sandboxes.values()].filter((s) => s.state === "running");
    if (!quiet || !active) throw new Error("the fleet has running sandboxes");
    const now = state.clock.now() + 60_000;
    logWork(state, new Set([quiet.sandboxID]), now);
    expect(active.logs.at(-1)?.timestamp).toBe(now);
    expect(quiet.logs.at(-1)?.timestamp).toBeLessThan(now);
  });
});

describe("the demo's node list", () => {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  /** Statuses of `n` reads of the sandboxapi flavor's node list. */
  async function nodeReads(faults: boolean, n: number): Promise<number[]> {
    sim = await startDemoSimulator(false, faults);
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${sim.apiUrl}${PREFIX}/nodes`, {
        headers: { "X-API-Key": DEMO_KEY },
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    return statuses;
  }

  it("never fails by default", async () => {
    expect(new Set(await nodeReads(false, 100))).toEqual(new Set([200]));
  });

  it("fails about one read in five with --faults", async () => {
    const failed = (await nodeReads(true, 100)).filter((s) => s === 503).length;
    expect(failed).toBeGreaterThan(5);
    expect(failed).toBeLessThan(40);
  });
});
