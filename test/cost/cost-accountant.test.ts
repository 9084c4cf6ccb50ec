import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CostAccountant, type WalkRow } from "../../src/cost/cost-accountant.js";
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
    expect(running(a).vcpu).toBeCloseTo(2 * 13, 9);
  });

  it("counts the first sandbox it tracks once, walk after walk (slot 0 is a slot)", () => {
    const a = accountant();
    for (const s of [10, 20, 30]) walk(a, T0 + s * 1000, [row("a")]);
    expect(running(a).vcpu).toBeCloseTo(2 * 30, 9);
    a.policyPause("idle", "a", "done", T0 + 30_000);
    expect(a.dropped().get("unknown_sandbox")).toBeUndefined();
  });

  it("ends a vanished sandbox midway between the walks when nothing says when", () => {
    const a = accountant();
    walk(a, T0 + 10_000, [row("a")]);
    walk(a, T0 + 20_000, []);
    expect(running(a).vcpu).toBeCloseTo(2 * 15, 9);
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
