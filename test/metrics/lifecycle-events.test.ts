import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { EventLedger } from "../../src/metrics/lifecycle-events.js";
import {
  KILL_REASONS,
  LIFECYCLE_EVENT_TYPES,
  type LifecycleEvent,
} from "../../src/platform/events.js";
import { FakeClock } from "../../src/util/clock.js";

const HOUR = 3_600_000;

function ledger(o: { maxIds?: number; maxKills?: number; maxTemplates?: number } = {}) {
  const registry = new Registry();
  const clock = new FakeClock(1_000_000_000_000);
  const l = new EventLedger({ ns: "sandbox", registry, clock, horizonMs: HOUR, ...o });
  return { l, registry, clock };
}

function ev(id: string, over: Partial<LifecycleEvent> = {}): LifecycleEvent {
  return { id, type: "created", sandboxId: `sb-${id}`, templateId: "base", timestamp: 0, ...over };
}

/** The value of the series of `name` whose labels include `labels`, read from the exposition. */
async function sample(registry: Registry, name: string, labels: Record<string, string>) {
  for (const line of (await registry.metrics()).split("\n")) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries(
      [...(m[2] ?? "").matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe("EventLedger", () => {
  it("counts an event once whichever way it comes, and counts the copy by the way it came", async () => {
    const { l, registry } = ledger();
    expect(l.accept(ev("a"), "poll")).toBe(true);
    expect(l.accept(ev("a"), "webhook")).toBe(false);
    expect(l.accept(ev("a"), "poll")).toBe(false);
    expect(
      await sample(registry, "sandbox_lifecycle_events_total", {
        type: "created",
        template: "base",
      }),
    ).toBe(1);
    expect(
      await sample(registry, "sandbox_lifecycle_events_duplicates_total", { via: "webhook" }),
    ).toBe(1);
    expect(
      await sample(registry, "sandbox_lifecycle_events_duplicates_total", { via: "poll" }),
    ).toBe(1);
  });

  it("exports every type and every kill reason at 0 for each template seen", async () => {
    const { l, registry } = ledger();
    l.accept(ev("a", { templateId: "t1" }), "poll");
    const text = await registry.metrics();
    for (const type of LIFECYCLE_EVENT_TYPES)
      expect(text).toContain(`sandbox_lifecycle_events_total{type="${type}",template="t1"}`);
    for (const reason of KILL_REASONS)
      expect(text).toContain(`sandbox_sandboxes_killed_total{template="t1",reason="${reason}"} 0`);
    expect(text).toContain('sandbox_lifecycle_events_duplicates_total{via="poll"} 0');
  });

  it("counts kills by reason, observes execution time, and remembers the kill for churn", async () => {
    const { l, registry } = ledger();
    l.accept(
      ev("k", { type: "killed", sandboxId: "s1", killReason: "orphaned", executionSeconds: 90 }),
      "webhook",
    );
    expect(
      await sample(registry, "sandbox_sandboxes_killed_total", {
        template: "base",
        reason: "orphaned",
      }),
    ).toBe(1);
    const text = await registry.metrics();
    expect(text).toContain('sandbox_sandbox_execution_seconds_bucket{le="60",template="base"} 0');
    expect(text).toContain('sandbox_sandbox_execution_seconds_bucket{le="120",template="base"} 1');
    expect(text).toContain('sandbox_sandbox_execution_seconds_sum{template="base"} 90');
    expect(l.killReason("s1")).toBe("orphaned");
    expect(l.killReason("s2")).toBeUndefined();
  });

  it("keeps the latest team id an event named", () => {
    const { l } = ledger();
    expect(l.teamId()).toBeUndefined();
    l.accept(ev("a", { teamId: "team-1" }), "poll");
    l.accept(ev("b"), "poll");
    expect(l.teamId()).toBe("team-1");
  });

  it("forgets ids past the horizon and past the cap, so memory stays bounded", () => {
    const { l, clock } = ledger({ maxIds: 3, maxKills: 2 });
    for (const id of ["a", "b", "c", "d", "e"]) l.accept(ev(id), "poll");
    expect(l.remembered).toBe(3);
    // "a" was forgotten (cap): a copy now counts again; "e" is still known.
    expect(l.accept(ev("e"), "webhook")).toBe(false);
    clock.advance(HOUR + 1);
    expect(l.accept(ev("e"), "webhook")).toBe(true);
    expect(l.remembered).toBe(1);
    for (const s of ["s1", "s2", "s3"])
      l.accept(ev(`k-${s}`, { type: "killed", sandboxId: s, killReason: "timeout" }), "poll");
    expect(l.killReason("s1")).toBeUndefined();
    expect(l.killReason("s3")).toBe("timeout");
  });

  it("exports a type E2B adds later as sent, and past 16 of them as other", async () => {
    const { l, registry } = ledger();
    for (let i = 0; i < 17; i++) l.accept(ev(`x${i}`, { type: `new${i}` }), "poll");
    expect(
      await sample(registry, "sandbox_lifecycle_events_total", { type: "new0", template: "base" }),
    ).toBe(1);
    expect(
      await sample(registry, "sandbox_lifecycle_events_total", { type: "other", template: "base" }),
    ).toBe(1);
  });

  it("guards template labels and gives templates past 2,000 one series, other", async () => {
    const registry = new Registry();
    const l = new EventLedger({
      ns: "sandbox",
      registry,
      clock: new FakeClock(0),
      horizonMs: HOUR,
      label: (v) => v.replaceAll("s3cr3t", "[REDACTED]"),
    });
    l.accept(ev("a", { templateId: "t-s3cr3t" }), "poll");
    for (let i = 0; i < 2_001; i++) l.accept(ev(`t${i}`, { templateId: `tpl-${i}` }), "poll");
    const text = await registry.metrics();
    expect(text).not.toContain("s3cr3t");
    expect(text).toContain(
      'sandbox_lifecycle_events_total{type="created",template="t-[REDACTED]"} 1',
    );
    expect(text).toContain('sandbox_lifecycle_events_total{type="created",template="tpl-1998"} 1');
    expect(text).not.toContain('template="tpl-1999"');
    expect(text).toContain('sandbox_lifecycle_events_total{type="created",template="other"} 2');
  });

  it("gives templates past metrics.maxEventTemplates one series, other, and counts the events folded", async () => {
    const { l, registry } = ledger({ maxTemplates: 3 });
    for (let i = 0; i < 5; i++)
      for (const n of [1, 2]) l.accept(ev(`e${i}-${n}`, { templateId: `tpl-${i}` }), "poll");
    const text = await registry.metrics();
    const templates = new Set([...text.matchAll(/template="([^"]*)"/g)].map((m) => m[1]));
    expect(templates).toEqual(new Set(["tpl-0", "tpl-1", "tpl-2", "other"]));
    expect(
      await sample(registry, "sandbox_lifecycle_events_total", {
        type: "created",
        template: "other",
      }),
    ).toBe(4);
    expect(text).toContain("sandbox_exporter_lifecycle_events_folded_total 4");
    // Each template costs its types and kill reasons at 0: the cap is what bounds the lines.
    const lines = text.split("\n").filter((line) => line.includes('template="'));
    expect(lines).toHaveLength(4 * (LIFECYCLE_EVENT_TYPES.length + KILL_REASONS.length));
  });

  it("has a horizon no older than the ids it still remembers: the look-back, then the cap", () => {
    const { l, clock } = ledger({ maxIds: 3 });
    const start = clock.now();
    // Nothing forgotten yet: the look-back (plus the skew margin) bounds it.
    expect(l.horizon()).toBeGreaterThan(start - HOUR);
    expect(l.horizon()).toBeLessThan(start - HOUR + 60_000);
    for (const id of ["a", "b", "c"]) {
      l.accept(ev(id), "poll");
      clock.advance(1_000);
    }
    // Full, but nothing forgotten: asking does not push an id out.
    expect(l.remembered).toBe(3);
    expect(l.accept(ev("a"), "webhook")).toBe(false);
    l.accept(ev("d"), "poll");
    // "a" (arrived at start) is gone: an event of that time may have been counted already.
    expect(l.horizon()).toBeGreaterThan(start);
    expect(l.horizon()).toBeLessThan(start + 60_000);
  });
});
