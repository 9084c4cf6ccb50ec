// The fleet both renderers of the render comparison get: the simulator's own (same seed, same
// records as it serves), as the exporter's normalizer turns them into domain sandboxes.
import type { Sandbox } from "../src/platform/types.js";
import { SimState } from "../src/simulator/state.js";
import { type Clock, systemClock } from "../src/util/clock.js";

/** Sandboxes changed between two renders of the steady-state figure: 1 % of the fleet. */
export const CHANGED_SHARE = 0.01;

/**
 * The simulator's fleet of `n` sandboxes, in id order (as a walk by id returns it); times on
 * `clock` (a fixed one makes the fleet, and its exposition, the same on every run).
 */
export function benchFleet(n: number, clock: Clock = systemClock): Sandbox[] {
  const state = new SimState({
    seed: 1,
    sandboxes: n,
    templates: 5,
    nodes: 3,
    logLinesPerSandbox: 0,
    clock,
  });
  return state.sortedIds().map((id) => {
    const s = state.sandboxes.get(id);
    if (!s) throw new Error(`no sandbox ${id}`);
    return {
      id,
      templateId: s.templateID,
      state: s.state,
      cpuCount: s.cpuCount,
      memoryMB: s.memoryMB,
      startedAt: s.startedAt,
      endAt: s.endAt,
      metadata: s.metadata,
      extra: {},
    };
  });
}

/**
 * The walk after `fleet`: one sandbox of every 100 (CHANGED_SHARE), a different one each round,
 * changes: its state flips between running and paused, a new id replaces it, or its CPU count
 * grows. New ids keep the old one's first 16 characters, so the walk stays in id order.
 */
export function changedFleet(fleet: readonly Sandbox[], round: number): Sandbox[] {
  const every = Math.round(1 / CHANGED_SHARE);
  return fleet.map((s, i) => {
    if (i % every !== round % every) return s;
    const kind = Math.floor(i / every) % 3;
    if (kind === 0) return { ...s, state: s.state === "running" ? "paused" : "running" };
    if (kind === 1) return { ...s, id: `${s.id.slice(0, -4)}r${round % 1000}`.padEnd(20, "0") };
    return { ...s, cpuCount: (s.cpuCount ?? 1) + 1 };
  });
}
