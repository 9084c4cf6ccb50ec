// Each tick collector fails on its own: a read has a deadline of one interval, the tick publishes
// what ended without waiting for what did not, a read still running is never started twice, and
// what it brings when it ends is carried into a later snapshot. Collectors here are stubs whose
// reads the test ends (gates), over a fake clock; the deadline and the tick's wait are real time.
import { describe, expect, it } from "vitest";
import type { PlatformReader, TickCollector } from "../../src/collect/collector.js";
import type { Snapshot, TickName } from "../../src/collect/snapshot.js";
import { PlatformNotFoundError } from "../../src/platform/http-errors.js";
import { FakeClock } from "../../src/util/clock.js";
import { type TestPollerOptions, testPoller } from "../helpers/poller.js";

const T0 = 1_790_000_000_000;
/** Real milliseconds: a tick waits half of it for its reads; a read's deadline is all of it. */
const INTERVAL = 300;

/** A reader with an empty sandbox list: the walk ends at once. */
const EMPTY: PlatformReader = {
  listSandboxPage: async () => ({ size: 0, items: () => [] }),
} as unknown as PlatformReader;

/** A read the test ends: `release(value)` resolves the oldest read still waiting. */
class Gate {
  reads = 0;
  private readonly waiting: Array<(v: unknown) => void> = [];
  private onRead: (() => void) | undefined;
  read = (): Promise<unknown> => {
    this.reads++;
    this.onRead?.();
    return new Promise((resolve) => this.waiting.push(resolve));
  };
  /** Resolves once `n` reads have started. */
  started(n: number): Promise<void> {
    if (this.reads >= n) return Promise.resolve();
    return new Promise((resolve) => {
      this.onRead = () => {
        if (this.reads >= n) resolve();
      };
    });
  }
  release(value: unknown): void {
    const next = this.waiting.shift();
    if (!next) throw new Error("no read is waiting");
    next(value);
  }
}

/** A collector named `name` (reusing a registry name) whose read is `read`. */
function stub(name: TickName, read: () => Promise<unknown>, after?: TickName): TickCollector {
  return {
    name,
    optional: false,
    ...(after ? { after } : {}),
    runs: () => true,
    read: async () => ({ value: (await read()) as never, requests: 1 }),
  };
}

/**
 * A poller over `collectors` (`over` winning); `next(pred)` resolves at the first snapshot
 * published from now on that passes.
 */
function poller(collectors: TickCollector[], over: Partial<TestPollerOptions> = {}) {
  const clock = new FakeClock(T0);
  const watchers: Array<{ pred: (s: Snapshot) => boolean; resolve: (s: Snapshot) => void }> = [];
  const p = testPoller({
    reader: EMPTY,
    clock,
    intervalMs: INTERVAL,
    collectors,
    ...over,
    onSnapshot: (s) => {
      for (const w of watchers.splice(0)) {
        if (w.pred(s)) w.resolve(s);
        else watchers.push(w);
      }
    },
  });
  const next = (pred: (s: Snapshot) => boolean) =>
    new Promise<Snapshot>((resolve) => watchers.push({ pred, resolve }));
  return { p, clock, next };
}

describe("a tick collector's own deadline", () => {
  it("publishes the collectors that ended without waiting for one that hangs", async () => {
    let healthReads = 0;
    const health = stub("health", async () => {
      healthReads++;
      return { status: "healthy", up: true };
    });
    const templates = new Gate();
    const { p, clock, next } = poller([health, stub("templates", templates.read)]);
    // The tick returns after half an interval, not when the hung read ends: had it waited for the
    // read's deadline, its snapshot would carry the read's failure.
    await p.tick();
    const first = p.latest as Snapshot;
    expect(first.refreshed).toEqual(expect.arrayContaining(["health", "sandboxes"]));
    expect(first.refreshed).not.toContain("templates");
    expect(first.collectors.health).toMatchObject({ success: true, stale: false });
    expect(first.startedAt).toBe(T0);
    // At its deadline the hung read is a failure, published on its own.
    const failed = await next((s) => s.refreshed.includes("templates"));
    expect(failed.collectors.templates).toMatchObject({
      success: false,
      stale: true,
      error: { code: "ERR_COLLECTOR_DEADLINE" },
    });
    // Ticks go on: health every tick, and no second read of the one still running.
    for (let i = 1; i <= 3; i++) {
      clock.advance(INTERVAL);
      // The read still hangs (its gate is shut): a tick that waited for it would never return.
      await p.tick();
      const s = p.latest as Snapshot;
      expect(s.collectors.health).toMatchObject({ success: true, stale: false });
      expect(s.collectors.health.lastSuccessAt).toBe(T0 + i * INTERVAL);
      expect(s.startedAt).toBe(T0 + i * INTERVAL);
    }
    expect(healthReads).toBe(4);
    expect(templates.reads).toBe(1);
    // It ends at last: its data is carried into the next snapshot, its outcome still failed.
    const landed = next((s) => s.refreshed.includes("templates"));
    templates.release([{ id: "late" }]);
    const late = await landed;
    expect(late.templates).toEqual([{ id: "late" }]);
    expect(late.collectors.templates).toMatchObject({ success: false, stale: true });
    expect(late.collectors.templates.error?.message).toMatch(/past its deadline of 300ms/);
    // The next tick reads it again; in time, it succeeds.
    clock.advance(INTERVAL);
    const tick = p.tick();
    await templates.started(2);
    templates.release([{ id: "fresh" }]);
    await tick;
    await p.walkDone();
    const s = p.latest as Snapshot;
    expect(s.templates).toEqual([{ id: "fresh" }]);
    expect(s.collectors.templates).toMatchObject({ success: true, stale: false });
  });

  it("starts a collector with `after` once the other's read ends, or at its deadline", async () => {
    const order: string[] = [];
    const events = new Gate();
    const team = stub(
      "teamMetrics",
      async () => {
        order.push("teamMetrics");
        return { teamId: "t" };
      },
      "events",
    );
    const ev = stub("events", () => {
      order.push("events");
      return events.read();
    });
    const { p, clock, next } = poller([team, ev]);
    // In time: the team read waits for the events read of the same tick.
    const tick = p.tick();
    await events.started(1);
    expect(order).toEqual(["events"]);
    events.release({ cursor: 1 });
    await tick;
    await p.walkDone();
    expect(order).toEqual(["events", "teamMetrics"]);
    expect((p.latest as Snapshot).collectors.teamMetrics).toMatchObject({ success: true });
    // The events read hangs: the team read starts at the events' deadline, not at its end.
    clock.advance(INTERVAL);
    const teamRead = next((s) => s.refreshed.includes("teamMetrics"));
    await p.tick();
    const s = await teamRead;
    expect(order).toEqual(["events", "teamMetrics", "events", "teamMetrics"]);
    expect(s.collectors.events.error?.code).toBe("ERR_COLLECTOR_DEADLINE");
    expect(s.collectors.teamMetrics).toMatchObject({ success: true, stale: false });
    events.release({ cursor: 2 });
    await p.walkDone();
  });
});

describe("a tick when reads and the walk are both slow", () => {
  it("publishes at half an interval with the walk still running, not after a second wait for it", async () => {
    // The walk takes three quarters of an interval (a timer, so it ends after the tick's half
    // interval and before a second half would): a tick that waits for reads, then for the walk,
    // would carry it, and last most of an interval; the schedule would skip its next trigger.
    const slowWalk = {
      listSandboxPage: () =>
        new Promise((resolve) =>
          setTimeout(() => resolve({ size: 0, items: () => [] }), INTERVAL * 0.75),
        ),
    } as unknown as PlatformReader;
    const events = new Gate();
    const { p, next } = poller([stub("events", events.read)], { reader: slowWalk });
    const walked = next((s) => s.walked);
    await p.tick();
    const own = p.latest as Snapshot;
    expect(own.walked, "the tick's snapshot carries the walk").toBe(false);
    expect(own.refreshed).not.toContain("events");
    // The walk publishes its own snapshot when it ends.
    expect((await walked).sandboxesComplete).toBe(true);
    events.release({ cursor: 1 });
    await p.walkDone();
  });
});

describe("a read whose bookkeeping throws", () => {
  it("frees the collector: an onSupport hook that throws once does not keep it busy for good", async () => {
    let reads = 0;
    const overview: TickCollector = {
      name: "overview",
      optional: true,
      runs: () => true,
      read: async () => {
        reads++;
        throw new PlatformNotFoundError("/cluster/overview", "GET");
      },
    };
    let throws = 1;
    const errors: unknown[] = [];
    const { p, clock } = poller([overview], {
      poll: { capabilityRecheckMs: INTERVAL },
      onSupport: () => {
        if (throws-- > 0) throw new Error("hook failed");
      },
      onError: (err) => errors.push(err),
    });
    await p.tick();
    await p.walkDone();
    expect(reads).toBe(1);
    expect((p.latest as Snapshot).collectors.overview).toMatchObject({ unsupported: true });
    // Past the capability re-check: read again.
    clock.advance(2 * INTERVAL);
    await p.tick();
    await p.walkDone();
    expect(reads).toBe(2);
    expect(errors).toEqual([expect.objectContaining({ message: "hook failed" })]);
  });
});

describe("an opt-in collector", () => {
  it("runs only while its setting is on, though its own `runs` says yes: the poller applies optIn", async () => {
    let reads = 0;
    const storage: TickCollector = {
      ...stub("storage", async () => {
        reads++;
        return {};
      }),
      optIn: "storage",
    };
    const off = poller([storage]);
    await off.p.tick();
    await off.p.walkDone();
    expect(reads).toBe(0);
    expect(off.p.latest?.collectors.storage).toMatchObject({ skipped: true });
    const on = poller([storage], { poll: { storage: true } });
    await on.p.tick();
    await on.p.walkDone();
    expect(reads).toBe(1);
    expect(on.p.latest?.collectors.storage).toMatchObject({ success: true });
  });
});
