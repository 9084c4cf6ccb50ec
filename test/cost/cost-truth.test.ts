// The simulator's cost truth stays bounded on a long run (npm run demo runs for days).
import { afterEach, describe, expect, it } from "vitest";
import { TRUTH_HORIZON_MS } from "../../src/simulator/cost-truth.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

const T0 = Date.UTC(2026, 10, 1);
let sim: Simulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe("the simulator's cost truth", () => {
  it("forgets a killed sandbox's spans an hour of its clock after the kill, and keeps the rest", async () => {
    const clock = new FakeClock(T0);
    sim = await startSimulator({ flavor: "e2b", sandboxes: 0, templates: 1, nodes: 1, clock });
    const state = sim.state;
    const truth = state.costTruth;
    const old = state.addSandbox().sandboxID;
    const alive = state.addSandbox().sandboxID;
    clock.set(T0 + 10_000);
    state.removeSandbox(old);
    // A churn of an hour and a half: one create and one kill a minute.
    for (let m = 1; m <= 90; m++) {
      clock.set(T0 + 10_000 + m * 60_000);
      state.removeSandbox(state.addSandbox().sandboxID);
    }
    expect(truth.spans(old)).toEqual([]);
    expect(truth.spans(alive)).toHaveLength(1);
    // Every sandbox killed within the horizon is still there; none before it.
    const kept = [...truth.ids()].filter((id) => id !== alive);
    expect(kept.length).toBe(TRUTH_HORIZON_MS / 60_000 + 1);
    for (const id of kept)
      expect(truth.spans(id)[0]?.to).toBeGreaterThanOrEqual(clock.now() - TRUTH_HORIZON_MS);
  });
});
