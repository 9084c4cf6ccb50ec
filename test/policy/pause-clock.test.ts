// The pause clock (pausedFor rules, sandbox_policy_paused_sandboxes): a paused event starts it at
// the event's time, else the first complete walk that saw the sandbox paused starts it at the walk's
// end; a resume, a kill or a walk that saw it running stops it; it never guesses older.
import { describe, expect, it } from "vitest";
import type { LifecycleEvent } from "../../src/platform/events.js";
import type { Sandbox } from "../../src/platform/types.js";
import { PauseClock } from "../../src/policy/pause-clock.js";

const T = 1_790_000_000_000;
const H = 3_600_000;

const sbx = (id: string, state: string): Sandbox => ({
  id,
  templateId: "t",
  state,
  metadata: {},
  extra: {},
});
const event = (sandboxId: string, type: string, timestamp: number): LifecycleEvent => ({
  id: `${sandboxId}-${type}-${timestamp}`,
  type,
  sandboxId,
  templateId: "t",
  timestamp,
});

describe("pause clock", () => {
  it("starts at the walk's end without events, and again after a restart (never older)", () => {
    const c = new PauseClock(new Set(["paused"]));
    c.observe([sbx("a", "paused"), sbx("b", "running")], T, T + 5_000);
    expect(c.pausedSince("a")).toBe(T + 5_000);
    expect(c.pausedSince("b")).toBeUndefined();
    c.observe([sbx("a", "paused")], T + H, T + H + 5_000);
    expect(c.pausedSince("a")).toBe(T + 5_000);
    const restarted = new PauseClock(new Set(["paused"]));
    restarted.observe([sbx("a", "paused")], T + 2 * H, T + 2 * H + 5_000);
    expect(restarted.pausedSince("a")).toBe(T + 2 * H + 5_000);
  });

  it("takes the paused event's time over a walk's, and a late older event does not move it back", () => {
    const c = new PauseClock(new Set(["paused"]));
    c.observe([sbx("a", "paused")], T, T + 5_000);
    c.onEvent(event("a", "paused", T - 3 * H));
    expect(c.pausedSince("a")).toBe(T - 3 * H);
    c.onEvent(event("a", "paused", T - 2 * H));
    c.onEvent(event("a", "paused", T - 5 * H));
    expect(c.pausedSince("a")).toBe(T - 2 * H);
  });

  it("stops on a resume or kill after the pause, and on a walk that saw it running", () => {
    const c = new PauseClock(new Set(["paused"]));
    c.onEvent(event("a", "paused", T));
    c.onEvent(event("a", "resumed", T - 1));
    expect(c.pausedSince("a")).toBe(T);
    c.onEvent(event("a", "resumed", T + 1));
    expect(c.pausedSince("a")).toBeUndefined();
    c.onEvent(event("b", "paused", T));
    c.observe([sbx("b", "running")], T + 10, T + 20);
    expect(c.pausedSince("b")).toBeUndefined();
  });

  it("keeps a pause an event reported after the walk began, though the walk read it running", () => {
    const c = new PauseClock(new Set(["paused"]));
    c.onEvent(event("a", "paused", T + 2_000));
    c.observe([sbx("a", "running")], T, T + 5_000);
    expect(c.pausedSince("a")).toBe(T + 2_000);
  });

  it("counts paused sandboxes by time paused", () => {
    const c = new PauseClock(new Set(["paused", "suspended"]));
    c.onEvent(event("a", "paused", T - 30 * 60_000));
    c.onEvent(event("b", "paused", T - 2 * H));
    c.onEvent(event("c", "paused", T - 3 * 24 * H));
    c.onEvent(event("d", "paused", T - 30 * 24 * H));
    c.observe(
      ["a", "b", "c", "d"].map((id) => sbx(id, "suspended")),
      T - 1_000,
      T,
    );
    expect(c.bands(T)).toEqual([1, 1, 1, 1]);
  });
});
