// The events collector against hostile E2B events endpoints (a small loopback server of its own, not
// the simulator): a burst far beyond one tick's pages while a cut read is pending, a server whose
// pages ignore `offset`, and a record stamped far in the past on top of the list. Every event is
// counted exactly once, each tick stays within its pages, and a read that cannot go on fails.
import { createServer } from "node:http";
import { Registry } from "prom-client";
import { Agent } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/catalog.js";
import type { TickContext } from "../../src/collect/collector.js";
import { EVENTS_SETTLE_MS, type EventCursor, eventsCollector } from "../../src/collect/events.js";
import { EventLedger } from "../../src/metrics/lifecycle-events.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { FakeClock, systemClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { scrape, startQuiet } from "../helpers/exporter.js";
import { listenLoopback } from "../helpers/loopback.js";
import { pollSettings } from "../helpers/poller.js";

const T0 = 1_790_000_000_000;
const MIN = 60_000;
/** The default schedule and page bound. */
const INTERVAL = 15_000;
const MAX_PAGES = 10;
const LOOKBACK = 5 * MIN;

interface Stored {
  id: string;
  at: number;
  seq: number;
}

/** The hostile platform: its events, how it orders and pages them, and hooks. */
const platform = {
  events: [] as Stored[],
  /** Serve the top page whatever `offset` says. */
  ignoreOffset: false,
  /** Serve an offset past this as this one: the server caps the offset. */
  maxOffset: Number.POSITIVE_INFINITY,
  /** Serve in order of storing, newest stored first, instead of by timestamp. */
  storedOrder: false,
  /** Runs after each page is computed: events "arrive between pages". */
  afterPage: undefined as (() => void) | undefined,
  requests: 0,
};
let seq = 0;
let url: string;
let close: () => Promise<void>;

function listed(): Stored[] {
  const out = [...platform.events];
  if (platform.storedOrder) return out.reverse();
  return out.sort((a, b) => b.at - a.at || b.seq - a.seq);
}

beforeAll(async () => {
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname !== "/events/sandboxes") {
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
      return;
    }
    platform.requests++;
    const asked = Number(u.searchParams.get("offset") ?? 0);
    const offset = platform.ignoreOffset ? 0 : Math.min(platform.maxOffset, asked);
    const limit = Math.min(100, Number(u.searchParams.get("limit") ?? 10));
    const page = listed()
      .slice(offset, offset + limit)
      .map((e) => ({
        version: "v2",
        id: e.id,
        type: "sandbox.lifecycle.created",
        eventData: null,
        sandboxId: `sb-${e.id}`,
        sandboxTemplateId: "base",
        sandboxTeamId: "team-1",
        timestamp: new Date(e.at).toISOString(),
      }));
    platform.afterPage?.();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(page));
  });
  ({ url, close } = await listenLoopback(server));
});
afterAll(() => close());

let clock: FakeClock;
let ledger: EventLedger;
let registry: Registry;
let control: ControlClient;

beforeEach(() => {
  Object.assign(platform, {
    events: [],
    ignoreOffset: false,
    maxOffset: Number.POSITIVE_INFINITY,
    storedOrder: false,
    afterPage: undefined,
    requests: 0,
  });
  clock = new FakeClock(T0);
  registry = new Registry();
  ledger = new EventLedger({ ns: "sandbox", registry, clock, horizonMs: LOOKBACK + 60 * MIN });
  control = testControl({
    apiUrl: url,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    dispatcher: new Agent(),
  });
});

/** Stores `n` events stamped evenly over [from, to); returns them. */
function add(n: number, from: number, to: number): Stored[] {
  const out: Stored[] = [];
  for (let i = 0; i < n; i++) {
    const e = {
      id: `ev-${String(seq).padStart(7, "0")}`,
      at: from + Math.floor((i * (to - from)) / n),
      seq: seq++,
    };
    platform.events.push(e);
    out.push(e);
  }
  return out;
}

function ctx(maxPages = MAX_PAGES): TickContext {
  return {
    reader: control,
    clock,
    poll: pollSettings({ eventsLookbackMs: LOOKBACK, eventsMaxPages: maxPages }),
    eventSink: ledger,
  };
}

/** Counted created events and poll duplicates, from the ledger's exposition. */
async function counted(): Promise<{ created: number; dupPoll: number }> {
  const text = await registry.metrics();
  const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  return {
    created: num(/sandbox_lifecycle_events_total\{type="created",template="base"\} (\d+)/),
    dupPoll: num(/sandbox_lifecycle_events_duplicates_total\{via="poll"\} (\d+)/),
  };
}

/** One tick of the collector as the poller runs it: the requests it made. */
async function tick(cursor: EventCursor | undefined, maxPages?: number) {
  return eventsCollector.read(ctx(maxPages), cursor);
}

describe("events collector against a hostile events endpoint", () => {
  it("counts every event of a burst of 6,930 between two ticks while a cut read is pending, once each", async () => {
    // A backlog in the look-back that one tick of 10 pages cannot read: the read is cut.
    add(1_500, T0 - 4 * MIN, T0);
    let r = await tick(undefined);
    expect(r.requests).toBe(MAX_PAGES);
    expect(r.value.pending).toBeDefined();
    let cursor = r.value;
    // 6,930 arrive before the next tick (7 pages' worth more than a tick reads), stamped over it.
    add(6_930, T0 + 1, T0 + INTERVAL);
    const perTick: number[] = [];
    // Then 5 a second, and 3 between any two pages while the backlog lasts.
    platform.afterPage = () => {
      if (perTick.length < 10) add(3, clock.now() - 500, clock.now());
    };
    for (let n = 0; n < 40; n++) {
      clock.advance(INTERVAL);
      add(75, clock.now() - INTERVAL, clock.now());
      r = await tick(cursor);
      cursor = r.value;
      perTick.push(r.requests);
    }
    expect(await counted()).toEqual({ created: platform.events.length, dupPoll: 0 });
    expect(Math.max(...perTick)).toBeLessThanOrEqual(MAX_PAGES);
    // Caught up: a few pages a tick, not 10 forever.
    expect(perTick.slice(-5).every((n) => n <= 3)).toBe(true);
    // Everything stamped more than the settle margin (and a tick) ago is read.
    expect(clock.now() - cursor.settled).toBeLessThanOrEqual(EVENTS_SETTLE_MS + INTERVAL);
  });

  it("keeps up with 700 events a tick (47 a second at a 15 s schedule) on 10 pages, none lost", async () => {
    let cursor: EventCursor | undefined;
    const perTick: number[] = [];
    for (let n = 0; n < 16; n++) {
      add(700, clock.now() - INTERVAL, clock.now());
      const r = await tick(cursor);
      cursor = r.value;
      perTick.push(r.requests);
      clock.advance(INTERVAL);
    }
    // Then quiet: the settle pass catches up on its bounded pages (after the cut fresh passes
    // finish: they count, it reads again).
    for (let n = 0; n < 10; n++) {
      const r = await tick(cursor);
      cursor = r.value;
      perTick.push(r.requests);
      clock.advance(INTERVAL);
    }
    expect(await counted()).toEqual({ created: platform.events.length, dupPoll: 0 });
    expect(Math.max(...perTick)).toBeLessThanOrEqual(MAX_PAGES);
    expect(cursor?.pending).toBeUndefined();
  });

  it("fails the read with ERR_EVENTS_OFFSET_IGNORED when pages ignore offset, and counts no event twice", async () => {
    add(700, T0 - 4 * MIN, T0);
    platform.ignoreOffset = true;
    await expect(tick(undefined)).rejects.toMatchObject({ code: "ERR_EVENTS_OFFSET_IGNORED" });
    // The top page is real: those 100 are counted, once, however often they are served.
    await expect(tick(undefined)).rejects.toMatchObject({ code: "ERR_EVENTS_OFFSET_IGNORED" });
    expect(await counted()).toEqual({ created: 100, dupPoll: 100 });
    expect(platform.requests).toBeLessThanOrEqual(2 * MAX_PAGES);
  });

  it("reports collect_success 0 for events while pages ignore offset, and reads all once they do not", async () => {
    const now = systemClock.now();
    add(700, now - 4 * MIN, now - 1_000);
    platform.ignoreOffset = true;
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b", "--poll-events"],
      env: { SANDBOX_API_URL: url, SANDBOX_API_KEY: "" },
    });
    const app = await startQuiet(config);
    try {
      await app.runCycle();
      expect(app.poller.latest?.collectors.events).toMatchObject({
        success: false,
        error: { code: "ERR_EVENTS_OFFSET_IGNORED" },
      });
      expect(await scrape(app)).toContain('sandbox_exporter_collect_success{collector="events"} 0');
      platform.ignoreOffset = false;
      await app.runCycle();
      const text = await scrape(app);
      expect(text).toContain('sandbox_exporter_collect_success{collector="events"} 1');
      expect(text).toContain('sandbox_lifecycle_events_total{type="created",template="base"} 700');
    } finally {
      await app.stop();
    }
  });

  it("drops and counts one record stamped far in the past on top of the list; the 500 below are counted", async () => {
    add(500, T0 - 3 * MIN, T0);
    // Stored last, stamped a year back, served first.
    add(1, T0 - 365 * 24 * 60 * MIN, T0 - 365 * 24 * 60 * MIN + 1);
    platform.storedOrder = true;
    let r = await tick(undefined);
    let cursor = r.value;
    for (let n = 0; n < 5 && cursor.pending !== undefined; n++) {
      clock.advance(INTERVAL);
      r = await tick(cursor);
      cursor = r.value;
    }
    expect(await counted()).toEqual({ created: 500, dupPoll: 0 });
    expect(cursor.misplaced).toBe(1);
    // It stays on top: later ticks read on past it, and count it once.
    add(20, clock.now(), clock.now() + 100);
    platform.events.push(platform.events.splice(500, 1)[0] as Stored);
    clock.advance(INTERVAL);
    r = await tick(cursor);
    expect(r.value.misplaced).toBe(1);
    expect(await counted()).toEqual({ created: 520, dupPoll: 0 });
  });

  it("fails with ERR_EVENTS_OFFSET_IGNORED when the server caps offset, before any event is skipped", async () => {
    add(1_500, T0 - 4 * MIN, T0);
    // The server answers any offset past 100 with the page at 100.
    platform.maxOffset = 100;
    let failed: unknown;
    let cursor: EventCursor | undefined;
    for (let n = 0; n < 3 && failed === undefined; n++) {
      try {
        cursor = (await tick(cursor)).value;
      } catch (err) {
        failed = err;
      }
      clock.advance(INTERVAL);
    }
    expect(failed).toMatchObject({ code: "ERR_EVENTS_OFFSET_IGNORED" });
    expect(cursor?.settled ?? T0 - LOOKBACK).toBe(T0 - LOOKBACK);
  });

  it("fails with ERR_EVENTS_NO_PROGRESS, tick after tick, while arrivals outrun its 3 pages", async () => {
    add(1_500, T0 - 4 * MIN, T0);
    const first = await tick(undefined, 3);
    expect(first.value.pending).toBeDefined();
    let cursor = first.value;
    // More than a page arrives between any two requests: the cut read never gets anywhere.
    platform.afterPage = () => add(120, clock.now() - 1_000, clock.now());
    const codes: string[] = [];
    for (let n = 0; n < 6; n++) {
      clock.advance(INTERVAL);
      try {
        cursor = (await tick(cursor, 3)).value;
        codes.push("ok");
      } catch (err) {
        codes.push((err as { code: string }).code);
      }
    }
    expect(codes.slice(-3)).toEqual(Array(3).fill("ERR_EVENTS_NO_PROGRESS"));
  });

  it("refuses poll.eventsMaxPages below 3, naming the setting", () => {
    for (const pages of ["1", "2"]) {
      expect(() =>
        loadConfig({
          argv: ["--listen", "127.0.0.1:0", "--poll-events", "--poll-events-max-pages", pages],
          env: { SANDBOX_API_URL: url, SANDBOX_API_KEY: "" },
        }),
      ).toThrow(/poll\.eventsMaxPages.*an integer from 3 to 1000/);
    }
  });

  it("counts an event stamped a year ahead once, and keeps its id out of the remembered ids", async () => {
    add(50, T0 - MIN, T0);
    // Stamped a year ahead: on top of the list, met every tick until the clock catches up.
    const [ahead] = add(1, T0 + 365 * 24 * 60 * MIN, T0 + 365 * 24 * 60 * MIN + 1);
    let cursor: EventCursor | undefined;
    for (let n = 0; n < 4; n++) {
      cursor = (await tick(cursor)).value;
      expect(cursor.recent.map(([id]) => id)).not.toContain(ahead?.id);
      add(5, clock.now(), clock.now() + 100);
      clock.advance(INTERVAL);
    }
    expect(await counted()).toEqual({ created: platform.events.length - 5, dupPoll: 0 });
  });
});
