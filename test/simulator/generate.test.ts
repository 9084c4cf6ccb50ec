import { describe, expect, it } from "vitest";
import { applyActivityMix } from "../../src/simulator/generate.js";
import { SimState } from "../../src/simulator/state.js";
import { cpuOf } from "../../src/simulator/usage.js";

const NOW = Date.parse("2026-11-23T12:00:00Z");
const MIN = 60_000;
const MIX = { idle: 0.5, silentBusy: 0.1, quietForMs: 120 * MIN, activeAgoMs: 5 * MIN };

function fleet(): SimState {
  return new SimState({
    seed: 7,
    sandboxes: 2_000,
    templates: 3,
    nodes: 2,
    logLinesPerSandbox: 5,
    clock: { now: () => NOW },
  });
}

describe("applyActivityMix", () => {
  it("gives the running sandboxes exact shares, and leaves the others alone", () => {
    const state = fleet();
    const kinds = applyActivityMix(state.sandboxes.values(), new Set(["running"]), MIX, NOW);
    const running = [...state.sandboxes.values()].filter((s) => s.state === "running");
    const count = (k: string) => [...kinds.values()].filter((v) => v === k).length;
    expect(kinds.size).toBe(running.length);
    expect(count("silent_busy")).toBe(Math.round(running.length * 0.1));
    expect(count("idle")).toBe(Math.round(running.length * 0.5));
    expect(
      [...state.sandboxes.values()].every((s) => s.state === "running" || s.cpuPct === undefined),
    ).toBe(true);
  });

  it("makes the quiet ones quiet, the silent ones busy by CPU, the active ones log recently", () => {
    const state = fleet();
    const kinds = applyActivityMix(state.sandboxes.values(), new Set(["running"]), MIX, NOW);
    for (const [id, kind] of kinds) {
      const s = state.sandbox(id);
      if (!s) throw new Error(id);
      const quietFor = NOW - (s.logs.at(-1)?.timestamp ?? 0);
      expect(quietFor >= MIX.quietForMs).toBe(kind !== "active");
      expect(cpuOf(s) >= 2).toBe(kind === "silent_busy");
      expect(s.logs.every((e) => e.timestamp >= s.startedAt)).toBe(true);
    }
  });
});
