import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CostAccountant } from "../../src/cost/cost-accountant.js";
import type { WalkRow } from "../../src/cost/cost-inputs.js";
import { E2B_PRICES } from "../../src/cost/cost-settings.js";
import { normalizeLifecycleEvent } from "../../src/platform/normalize/events.js";
import { FakeClock } from "../../src/util/clock.js";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "e2b", "lifecycle-events");
const T0 = Date.UTC(2025, 7, 6, 20, 0, 0);

function accountant(clock = new FakeClock(T0), origin = T0): CostAccountant {
  return new CostAccountant({
    prices: { ...E2B_PRICES, templates: {} },
    attributeBy: ["<custom-key>"],
    runningStates: ["running"],
    pausedStates: ["paused"],
    origin,
    clock,
  });
}

function row(id: string, over: Partial<WalkRow> = {}): WalkRow {
  return {
    id,
    templateId: "tpl",
    state: "running",
    cpuCount: 2,
    memoryMB: 512,
    startedAt: T0,
    endAt: undefined,
    metadata: undefined,
    ...over,
  };
}

const walk = (a: CostAccountant, at: number, rows: WalkRow[]): void =>
  a.observeWalk(at, (visit) => {
    for (const r of rows) visit(r);
  });

/** Empty walks every 15 s from `from` for two minutes: past the wait for a guessed end's event. */
function walksWithoutEvents(a: CostAccountant, from: number): void {
  for (let s = 15_000; s <= 120_000; s += 15_000) walk(a, from + s, []);
}

/** E2B's killed event of a run from `startedAt` that lasted `durationMs`. */
function killed(id: string, startedAt: number, durationMs: number) {
  return {
    id: `kill-${id}`,
    type: "killed" as const,
    sandboxId: id,
    templateId: "tpl",
    timestamp: startedAt + durationMs,
    execution: { startedAt, vcpuCount: 2, memoryMB: 512, durationMs },
  };
}

function running(a: CostAccountant): { vcpu: number; gib: number } {
  let vcpu = 0;
  let gib = 0;
  for (const t of a.usage()) {
    vcpu += t.running.vcpuSeconds;
    gib += t.running.gibSeconds;
  }
  return { vcpu, gib };
}

describe("the cost accountant", () => {
  it("counts a run no walk saw from E2B's paused event: execution, resources and metadata", () => {
    const raw: unknown = JSON.parse(readFileSync(join(FIXTURES, "paused-execution.json"), "utf8"));
    const event = normalizeLifecycleEvent(raw);
    const clock = new FakeClock(Date.UTC(2025, 7, 6, 21));
    const a = accountant(clock);
    a.observeEvent(event);
    // 2 vCPU and 0.5 GiB for execution_time 12,123 ms.
    expect(running(a).vcpu).toBeCloseTo(2 * 12.123, 9);
    expect(running(a).gib).toBeCloseTo(0.5 * 12.123, 9);
    const cost = 12.123 * (2 * E2B_PRICES.vcpuSecond + 0.5 * E2B_PRICES.memoryGiBSecond);
    expect(a.attribution(0).values.get("<custom-value>")).toBeCloseTo(cost, 15);
  });

  it("integrates from startedAt and ends a vanished sandbox at its endAt when it expired", () => {
    const a = accountant();
    walk(a, T0 + 10_000, [row("a", { startedAt: T0 + 4_000, endAt: T0 + 17_000 })]);
    walk(a, T0 + 25_000, []);
    walksWithoutEvents(a, T0 + 25_000);
    expect(running(a).vcpu).toBeCloseTo(2 * 13, 9);
  });

  it("counts the first sandbox it tracks once, walk after walk (slot 0 is a slot)", () => {
    const a = accountant();
    for (const s of [10, 20, 30]) walk(a, T0 + s * 1000, [row("a")]);
    expect(running(a).vcpu).toBeCloseTo(2 * 30, 9);
    a.policyPause("idle", "a", "done", T0 + 30_000);
    expect(a.dropped().get("unknown_sandbox")).toBeUndefined();
  });

  it("keeps each sandbox's own span when rows shift position and a gone one's slot is reused", () => {
    const clock = new FakeClock(T0 + 1_020_000);
    const a = accountant(clock);
    const big = { cpuCount: 8 };
    walk(a, T0 + 10_000, [row("a"), row("b", big), row("c")]);
    // "a" goes (the rows after it move up one position) and is forgotten after 15 minutes.
    for (let s = 20; s <= 1_000; s += 20) walk(a, T0 + s * 1000, [row("b", big), row("c")]);
    // "d" takes the freed slot, listed where "b" was; then the rows move again.
    const d = row("d", { startedAt: T0 + 1_005_000 });
    walk(a, T0 + 1_010_000, [d, row("b", big), row("c")]);
    walk(a, T0 + 1_020_000, [row("b", big), row("c"), d]);
    expect(a.size).toBe(3);
    // a: 15 s (midway to the walk that missed it); b and c: 1,020 s; d: 15 s from its start.
    expect(running(a).vcpu).toBeCloseTo(2 * 15 + 8 * 1_020 + 2 * 1_020 + 2 * 15, 6);
  });

  it("ends a vanished sandbox midway between the walks when nothing says when", () => {
    const a = accountant();
    walk(a, T0 + 10_000, [row("a")]);
    walk(a, T0 + 20_000, []);
    walksWithoutEvents(a, T0 + 20_000);
    expect(running(a).vcpu).toBeCloseTo(2 * 15, 9);
  });

  it("settles a run a walk missed on its event's end when the event comes after that walk", () => {
    const clock = new FakeClock(T0 + 25_000);
    const a = accountant(clock);
    walk(a, T0 + 10_000, [row("a")]);
    walk(a, T0 + 25_000, []);
    // Killed at +11 s: until its event says so, only the 10 s a walk saw are counted.
    expect(running(a).vcpu).toBeCloseTo(2 * 10, 9);
    clock.set(T0 + 40_000);
    a.observeEvent(killed("a", T0, 11_000));
    expect(running(a).vcpu).toBeCloseTo(2 * 11, 9);
    walksWithoutEvents(a, T0 + 25_000);
    expect(running(a).vcpu).toBeCloseTo(2 * 11, 9);
  });

  it("takes the guessed end only once the event's settle margin and two walks have passed", () => {
    const a = accountant();
    walk(a, T0 + 10_000, [row("a")]);
    walk(a, T0 + 25_000, []);
    // Midway is +17.5 s; it stands after 60 s and two 15 s intervals with no event.
    for (let at = 40_000; at <= 105_000; at += 15_000) walk(a, T0 + at, []);
    expect(running(a).vcpu).toBeCloseTo(2 * 10, 9);
    walk(a, T0 + 120_000, []);
    expect(running(a).vcpu).toBeCloseTo(2 * 17.5, 9);
  });

  it("corrects a pause a walk guessed from the late event, and the run after it goes on", () => {
    const clock = new FakeClock(T0 + 60_000);
    const a = accountant(clock);
    walk(a, T0 + 10_000, [row("a")]);
    walk(a, T0 + 25_000, [row("a", { state: "paused" })]);
    walk(a, T0 + 40_000, [row("a")]);
    // Paused at +12 s, resumed at +30 s (guessed +32.5 s); both events come after the walks.
    a.observeEvent({ ...killed("a", T0, 12_000), id: "p", type: "paused" });
    expect(running(a).vcpu).toBeCloseTo(2 * (12 + 7.5), 9);
    walk(a, T0 + 55_000, [row("a")]);
    expect(running(a).vcpu).toBeCloseTo(2 * (12 + 22.5), 9);
  });

  it("drops an execution that does not end at its event: an hour of clock skew, a zero time", () => {
    const clock = new FakeClock(T0 + 20_000);
    const a = accountant(clock);
    walk(a, T0 + 10_000, [row("a"), row("b")]);
    const skewed = killed("a", T0 + 3_600_000, 11_000);
    a.observeEvent({ ...skewed, timestamp: T0 + 11_000 });
    // Go's zero time, 0001-01-01: execution_time is then the whole era up to the event.
    const zero = Date.parse("0001-01-01T00:00:00Z");
    a.observeEvent({ ...killed("b", zero, T0 + 12_000 - zero), id: "kill-b0" });
    expect(Object.fromEntries(a.dropped())).toMatchObject({ bad_execution: 2 });
    walk(a, T0 + 20_000, [row("a"), row("b")]);
    expect(running(a).vcpu).toBeCloseTo(2 * 2 * 20, 9);
  });

  it("counts a sandbox listed without cpuCount or memoryMB once as missing_resources", () => {
    const a = accountant();
    for (const s of [10, 20, 30])
      walk(a, T0 + s * 1000, [
        row("a", { cpuCount: undefined }),
        row("b", { memoryMB: undefined }),
      ]);
    expect(a.dropped().get("missing_resources")).toBe(2);
    expect(running(a).vcpu).toBe(0);
  });

  it("counts nothing before its origin (the process start)", () => {
    const a = accountant(new FakeClock(T0 + 3_600_000), T0 + 3_600_000);
    walk(a, T0 + 3_600_000, [row("a", { startedAt: T0 })]);
    expect(running(a).vcpu).toBe(0);
    walk(a, T0 + 3_610_000, [row("a", { startedAt: T0 })]);
    expect(running(a).vcpu).toBeCloseTo(20, 9);
  });

  it("drops and counts negative or absurd resources, a start in the future, time running backwards", () => {
    const clock = new FakeClock(T0 + 60_000);
    const a = accountant(clock);
    walk(a, T0 + 60_000, [
      row("neg-cpu", { cpuCount: -2 }),
      row("neg-mem", { memoryMB: -1 }),
      row("huge", { cpuCount: 1e9 }),
      row("future", { startedAt: T0 + 86_400_000 }),
      row("ok", { startedAt: T0 }),
    ]);
    walk(a, T0 + 30_000, [row("ok", { startedAt: T0 })]);
    const dropped = Object.fromEntries(a.dropped());
    expect(dropped).toMatchObject({ bad_resources: 3, future_start: 1, time_backwards: 1 });
    const { vcpu, gib } = running(a);
    expect(vcpu).toBeCloseTo(2 * 60, 9);
    expect(gib).toBeCloseTo(0.5 * 60, 9);
    for (const t of a.usage()) {
      for (const v of [t.running.vcpuSeconds, t.paused.vcpuSeconds, t.running.gibSeconds])
        expect(Number.isFinite(v) && v >= 0).toBe(true);
    }
  });

  it("drops an event from the future and one with absurd resources", () => {
    const clock = new FakeClock(T0);
    const a = accountant(clock);
    const base = {
      id: "e1",
      type: "killed",
      sandboxId: "s1",
      templateId: "tpl",
      timestamp: T0 + 3_600_000,
      execution: { startedAt: T0, vcpuCount: 2, memoryMB: 512, durationMs: 1000 },
    };
    a.observeEvent(base);
    a.observeEvent({
      ...base,
      id: "e2",
      timestamp: T0,
      execution: { ...base.execution, vcpuCount: 1e9 },
    });
    expect(Object.fromEntries(a.dropped())).toMatchObject({ future_event: 1, bad_resources: 1 });
    expect(running(a).vcpu).toBe(0);
  });
});
