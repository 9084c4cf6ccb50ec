import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SandboxTable } from "../../src/collect/sandbox-table.js";
import { CostAccountant } from "../../src/cost/cost-accountant.js";
import type { WalkRow } from "../../src/cost/cost-inputs.js";
import { E2B_PRICES } from "../../src/cost/cost-settings.js";
import type { Sandbox } from "../../src/platform/types.js";
import { FakeClock } from "../../src/util/clock.js";

const T0 = Date.UTC(2026, 0, 1);

function accountant(clock: FakeClock): CostAccountant {
  return new CostAccountant({
    prices: { ...E2B_PRICES, templates: {} },
    attributeBy: [],
    runningStates: ["running"],
    pausedStates: ["paused"],
    origin: T0,
    clock,
  });
}

/** One listed sandbox of a generated walk: times in seconds from the walk. */
const listed = fc.record({
  n: fc.integer({ min: 0, max: 40 }),
  template: fc.integer({ min: 0, max: 2 }),
  state: fc.constantFrom("running", "running", "paused", "pausing"),
  cpu: fc.constantFrom<number | undefined>(2, 2, 4, 0.5, undefined, -1),
  memoryMB: fc.constantFrom<number | undefined>(512, 2048, undefined),
  // Mostly in the past; now and then more than a minute ahead (a future_start drop).
  startedS: fc.oneof(
    { arbitrary: fc.integer({ min: -7200, max: 0 }), weight: 5 },
    { arbitrary: fc.integer({ min: 61, max: 7200 }), weight: 1 },
  ),
  endS: fc.option(fc.integer({ min: -60, max: 3600 }), { nil: undefined }),
});

/** Walks 15 s apart, some 20 min apart (gone sandboxes are forgotten and their slots reused). */
const walks = fc.array(
  fc.record({
    gapS: fc.constantFrom(15, 15, 15, 1200),
    rows: fc.uniqueArray(listed, { selector: (r) => r.n, maxLength: 30 }),
    // A walk out of id order makes a table that does not share the last one's id strings.
    reversed: fc.boolean(),
    // A kill told just before the walk (its end a few seconds after the walk's start) or after it.
    killed: fc.option(fc.record({ n: fc.integer({ min: 0, max: 40 }), early: fc.boolean() }), {
      nil: undefined,
    }),
  }),
  { minLength: 1, maxLength: 25 },
);

type Listed = typeof listed extends fc.Arbitrary<infer R> ? R : never;

function sandbox(r: Listed, at: number): Sandbox {
  return {
    id: `sbx-${r.n}`,
    templateId: `tpl-${r.template}`,
    state: r.state,
    cpuCount: r.cpu,
    memoryMB: r.memoryMB,
    startedAt: at + r.startedS * 1000,
    endAt: r.endS === undefined ? undefined : at + r.endS * 1000,
    domain: undefined,
    metadata: {},
    extra: {},
  };
}

const asRow = (s: Sandbox): WalkRow => ({
  id: s.id,
  templateId: s.templateId,
  state: s.state,
  cpuCount: s.cpuCount,
  memoryMB: s.memoryMB,
  startedAt: s.startedAt,
  endAt: s.endAt,
  metadata: undefined,
});

/** A running sandbox with 2 vCPUs and 512 MB, started a minute before the walk. */
const ROW: Listed = {
  n: 0,
  template: 0,
  state: "running",
  cpu: 2,
  memoryMB: 512,
  startedS: -60,
  endS: undefined,
};

describe("a table's walk", () => {
  it("is accounted exactly as the same walk given as records, through churn, drops, kills and slot reuse", () => {
    fc.assert(
      fc.property(walks, (ws) => {
        const clock = new FakeClock(T0);
        const byTable = accountant(clock);
        const byRecords = accountant(clock);
        let previous: SandboxTable | undefined;
        for (const w of ws) {
          const kill = (n: number): void => {
            const end = clock.now() + 5_000;
            const event = {
              id: `kill-${end}`,
              type: "killed" as const,
              sandboxId: `sbx-${n}`,
              templateId: "tpl-0",
              timestamp: end,
              execution: {
                startedAt: end - 65_000,
                vcpuCount: 2,
                memoryMB: 512,
                durationMs: 65_000,
              },
            };
            byTable.observeEvent(event);
            byRecords.observeEvent(event);
          };
          clock.advance(w.gapS * 1000 - 1000);
          if (w.killed?.early) kill(w.killed.n);
          clock.advance(1000);
          const at = clock.now();
          const rows = w.rows.map((r) => sandbox(r, at));
          const b = SandboxTable.builder(previous);
          for (const s of w.reversed ? [...rows].reverse() : rows) b.push(s);
          previous = b.build();
          byTable.observeTable(at, previous.rows());
          // The table's order (by id), so both add the same numbers in the same order.
          const sorted = [...rows].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
          byRecords.observeWalk(at, (visit) => {
            for (const s of sorted) visit(asRow(s));
          });
          if (w.killed && !w.killed.early) kill(w.killed.n);
          expect([...byTable.usage()]).toEqual([...byRecords.usage()]);
          expect(byTable.dropped()).toEqual(byRecords.dropped());
          expect(byTable.size).toBe(byRecords.size);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("keeps the slot of a sandbox listed in the walk that finds it gone 20 minutes ago", () => {
    const clock = new FakeClock(T0);
    const byTable = accountant(clock);
    const byRecords = accountant(clock);
    let previous: SandboxTable | undefined;
    const walk = (ids: string[]): void => {
      const at = clock.now();
      const rows = ids.map((n) => sandbox({ ...ROW, n: Number(n) }, at));
      const b = SandboxTable.builder(previous);
      for (const s of rows) b.push(s);
      previous = b.build();
      byTable.observeTable(at, previous.rows());
      byRecords.observeWalk(at, (visit) => {
        for (const s of rows) visit(asRow(s));
      });
    };
    clock.advance(15_000);
    walk(["1"]);
    // 20 minutes on, sbx-5's kill comes a second before the walk, ending 4 s after the walk's
    // start: the walk lists it (read before the kill) and it is gone since the walk before.
    clock.advance(1_199_000);
    const end = clock.now() + 5_000;
    const execution = { startedAt: end - 65_000, vcpuCount: 2, memoryMB: 512, durationMs: 65_000 };
    const kill = { id: "k", type: "killed" as const, sandboxId: "sbx-5", templateId: "tpl-0" };
    for (const a of [byTable, byRecords]) a.observeEvent({ ...kill, timestamp: end, execution });
    clock.advance(1_000);
    walk(["1", "5"]);
    for (const ids of [
      ["1", "5"],
      ["0", "1", "5"],
    ]) {
      clock.advance(15_000);
      walk(ids);
      expect(byTable.size).toBe(byRecords.size);
      expect([...byTable.usage()]).toEqual([...byRecords.usage()]);
    }
    expect(byTable.size).toBe(3);
  });
});
