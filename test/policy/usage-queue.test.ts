import { describe, expect, it } from "vitest";
import { USAGE_BATCH } from "../../src/collect/usage-collector.js";
import type { Sandbox } from "../../src/platform/types.js";
import { heldStreaks, usageOrder } from "../../src/policy/usage-queue.js";

const NOW = Date.parse("2026-11-23T12:00:00Z");
const MIN = 60_000;

function fleet(n: number): Sandbox[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `sbx-${String(i).padStart(4, "0")}`,
    templateId: "t1",
    state: "running",
    metadata: {},
    extra: {},
  }));
}

/** Every batch the queue hands out, with `more` as given per call (then false), at most 50. */
function drain(queue: ReturnType<typeof usageOrder>, more: boolean[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < 50; i++) {
    const part = queue.next(more[i] ?? false);
    if (part.length === 0) break;
    out.push(part.map((s) => s.id));
  }
  return out;
}

describe("the order of the usage checks", () => {
  it("hands out streak holders first, the longest streak first, then the sample, then the longest idle", () => {
    const all = fleet(6);
    const [a, b, c, d, e, f] = all as [Sandbox, Sandbox, Sandbox, Sandbox, Sandbox, Sandbox];
    // Idle since: a the longest, f the shortest.
    const activity = new Map(all.map((s, i) => [s.id, NOW - (10 - i) * MIN]));
    const queue = usageOrder(all, {
      held: new Map([
        [e.id, 1],
        [f.id, 3],
      ]),
      sample: new Set([d]),
      cooling: new Set([a.id]),
      activity,
    });
    expect(drain(queue, [true])).toEqual([[f, e, d, b, c, a].map((s) => s.id)]);
  });

  it("checks every held and sampled sandbox even once enough are known idle, topping batches up", () => {
    const all = fleet(500);
    const activity = new Map(all.map((s, i) => [s.id, NOW - (1_000 - i) * MIN]));
    const held = new Map(all.slice(380).map((s) => [s.id, 1]));
    const sample = new Set(all.slice(0, 150));
    const queue = usageOrder(all, { held, sample, cooling: new Set(), activity });
    // The first batch is wanted; after it, enough are known idle.
    const batches = drain(queue, [true]);
    const ids = (from: number, to: number) => all.slice(from, to).map((s) => s.id);
    // 100 held; then the sample; its last 50 topped up with the other 20 held, then the longest idle.
    expect(batches).toEqual([
      ids(380, 480),
      ids(0, 100),
      [...ids(100, 150), ...ids(480, 500), ...ids(150, 180)],
    ]);
  });

  it("hands out nothing more once enough are known and no sampled sandbox is left", () => {
    const all = fleet(300);
    const activity = new Map(all.map((s) => [s.id, NOW - 60 * MIN]));
    const queue = usageOrder(all, {
      held: new Map(),
      sample: new Set(),
      cooling: new Set(),
      activity,
    });
    expect(drain(queue, [true, true]).map((b) => b.length)).toEqual([USAGE_BATCH, USAGE_BATCH]);
  });

  it("takes the longest streak any rule holds a sandbox on", () => {
    const held = heldStreaks({
      streaks: new Map([
        [
          "a",
          new Map([
            ["sbx-1", { count: 1, since: NOW }],
            ["sbx-2", { count: 2, since: NOW }],
          ]),
        ],
        ["b", new Map([["sbx-1", { count: 4, since: NOW }]])],
      ]),
      lastAction: new Map(),
    });
    expect(held).toEqual(
      new Map([
        ["sbx-1", 4],
        ["sbx-2", 2],
      ]),
    );
  });
});

describe("usage batches of the policy", () => {
  it("bounds a batch by URL length too, and never asks about an id that cannot fit alone", () => {
    const sb = (id: string) => ({ id }) as unknown as Sandbox;
    const long = Array.from({ length: 5 }, (_, i) => sb(`${i}${"l".repeat(2_500)}`));
    const huge = sb("h".repeat(100_000));
    const q = usageOrder([huge, ...long], {
      held: new Map(),
      sample: new Set(),
      cooling: new Set(),
      activity: new Map(),
    });
    const batches: string[][] = [];
    for (let part = q.next(true), n = 0; part.length > 0 && n < 10; part = q.next(true), n++)
      batches.push(part.map((s) => s.id));
    expect(batches.map((b) => b.length)).toEqual([2, 2, 1]);
    expect(batches.flat()).not.toContain(huge.id);
  });
});
