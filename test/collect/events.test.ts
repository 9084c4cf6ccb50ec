// The events collector against a small hand-written E2B events endpoint over loopback (not the
// simulator): it pages GET /events/sandboxes newest first by offset, as E2B does, while the test
// adds events between pages and between ticks. Every event is counted once, none is lost.
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
import { inShard } from "../../src/util/shard.js";
import { testControl } from "../helpers/control.js";
import { scrape, startQuiet } from "../helpers/exporter.js";
import { listenLoopback } from "../helpers/loopback.js";
import { pollSettings, testPoller, tickAndWait } from "../helpers/poller.js";

const T0 = 1_790_000_000_000;
const MIN = 60_000;
const INTERVAL = 1_000;
const LOOKBACK = 5 * MIN;
const HOUR = 60 * MIN;

/** The fake platform: its events (insertion order), the queries it got, and hooks. */
const platform = {
  events: [] as Array<Record<string, unknown> & { timestamp: string }>,
  queries: [] as URLSearchParams[],
  status: 200,
  /** Runs after a page was computed, before it is sent: events "arrive between pages". */
  afterPage: undefined as ((served: number) => void) | undefined,
};
let url: string;
let close: () => Promise<void>;
let seq = 0;

/** E2B's order: newest first (orderAsc=false), ties in reverse insertion order. */
function ordered(asc: boolean) {
  const withIndex = platform.events.map((e, i) => ({ e, i, t: Date.parse(e.timestamp) }));
  withIndex.sort((a, b) => (a.t - b.t || a.i - b.i) * (asc ? 1 : -1));
  return withIndex.map((x) => x.e);
}

beforeAll(async () => {
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname === "/v2/sandboxes") {
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
      return;
    }
    if (u.pathname !== "/events/sandboxes" || platform.status !== 200) {
      res.writeHead(platform.status === 200 ? 404 : platform.status).end('{"message":"no"}');
      return;
    }
    platform.queries.push(u.searchParams);
    const offset = Number(u.searchParams.get("offset") ?? 0);
    const limit = Number(u.searchParams.get("limit") ?? 10);
    if (!(limit >= 1 && limit <= 100)) {
      res.writeHead(400).end('{"message":"limit"}');
      return;
    }
    const page = ordered(u.searchParams.get("orderAsc") === "true").slice(offset, offset + limit);
    platform.afterPage?.(platform.queries.length);
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
  platform.events = [];
  platform.queries = [];
  platform.status = 200;
  platform.afterPage = undefined;
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

/** Adds an event of E2B's shape at `at` (epoch ms); returns its id. */
function add(at: number, over: Record<string, unknown> = {}): string {
  const id = `ev-${String(seq++).padStart(6, "0")}`;
  platform.events.push({
    version: "v2",
    id,
    type: "sandbox.lifecycle.created",
    eventData: null,
    sandboxId: `sb-${id}`,
    sandboxTemplateId: "base",
    sandboxTeamId: "team-1",
    timestamp: new Date(at).toISOString(),
    ...over,
  });
  return id;
}

function ctx(maxPages = 10, lookbackMs = LOOKBACK): TickContext {
  return ctxFor(maxPages, lookbackMs);
}

function ctxFor(maxPages: number, lookbackMs = LOOKBACK): TickContext {
  return {
    reader: control,
    clock,
    poll: pollSettings({ eventsLookbackMs: lookbackMs, eventsMaxPages: maxPages }),
    eventSink: ledger,
  };
}

/** Counted created events, and duplicates by way, from the ledger's exposition. */
async function counted(): Promise<{ created: number; dupPoll: number; dupWebhook: number }> {
  const text = await registry.metrics();
  const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  return {
    created: num(/sandbox_lifecycle_events_total\{type="created",template="base"\} (\d+)/),
    dupPoll: num(/sandbox_lifecycle_events_duplicates_total\{via="poll"\} (\d+)/),
    dupWebhook: num(/sandbox_lifecycle_events_duplicates_total\{via="webhook"\} (\d+)/),
  };
}

async function tick(maxPages?: number, previous?: EventCursor, lookbackMs?: number) {
  return eventsCollector.read(ctx(maxPages, lookbackMs), previous);
}

describe("events collector", () => {
  it("reads back the look-back window on its first read, newest first, 100 a page", async () => {
    add(T0 - 10 * MIN);
    add(T0 - 4 * MIN);
    add(T0 - MIN);
    const r = await tick();
    expect(r.value).toMatchObject({ read: 2, accepted: 2, floor: T0 - MIN });
    expect(r.requests).toBe(1);
    expect(platform.queries[0]?.get("limit")).toBe("100");
    expect(platform.queries[0]?.get("offset")).toBe("0");
    expect(platform.queries[0]?.has("orderAsc")).toBe(false);
    expect((await counted()).created).toBe(2);
  });

  it("with a look-back of 0 counts only events from the start on", async () => {
    add(T0 - 1);
    const first = await tick(10, undefined, 0);
    expect(first.value.read).toBe(0);
    add(T0 + 1);
    clock.advance(INTERVAL);
    expect((await tick(10, first.value, 0)).value.read).toBe(1);
    expect((await counted()).created).toBe(1);
  });

  it("loses and repeats nothing when events arrive between pages and between ticks", async () => {
    for (let i = 0; i < 250; i++) add(T0 - 290_000 + i * 1_000);
    // 7 new events land on top after the first page is served: the next pages shift by 7.
    platform.afterPage = (served) => {
      if (served === 1) for (let i = 0; i < 7; i++) add(T0 + i);
    };
    const first = await tick();
    expect(first.requests).toBe(3);
    expect(first.value.read).toBe(250);
    platform.afterPage = undefined;
    clock.advance(INTERVAL);
    // One more at exactly the newest timestamp already read: the same instant, a new id.
    add(T0 + 6);
    const second = await tick(10, first.value);
    expect(second.requests).toBe(1);
    expect(second.value.read).toBe(8);
    clock.advance(INTERVAL);
    const third = await tick(10, second.value);
    expect(third.value.read).toBe(0);
    expect(await counted()).toEqual({ created: 258, dupPoll: 0, dupWebhook: 0 });
  });

  it("finds an event stored late under an older timestamp, within the settle margin", async () => {
    add(T0 - 2 * MIN);
    const first = await tick();
    add(T0 + 10_000);
    // Stored after the newer one, stamped 30 s before it.
    const late = add(T0 - 20_000);
    clock.advance(INTERVAL);
    const second = await tick(10, first.value);
    expect(second.value.read).toBe(2);
    expect(second.value.recent.map(([id]) => id)).toContain(late);
    clock.advance(INTERVAL);
    expect((await tick(10, second.value)).value.read).toBe(0);
    expect(await counted()).toEqual({ created: 3, dupPoll: 0, dupWebhook: 0 });
  });

  it("reads at most maxPages a tick and goes on next tick where it stopped", async () => {
    for (let i = 0; i < 350; i++) add(T0 - 4 * MIN + i * 100);
    const first = await tick(2);
    expect(first.requests).toBe(2);
    // The top page, then the next one from the last event in place (the last slots read again).
    expect(first.value.read).toBe(197);
    expect(first.value.pending).toBeDefined();
    // 30 arrive between ticks: above where the cut read stopped.
    for (let i = 0; i < 30; i++) add(T0 + 1_000 + i);
    let cursor = first.value;
    // A bounded number of ticks of 2 pages until the cut read is done.
    for (let n = 0; n < 5 && cursor.pending !== undefined; n++) {
      clock.advance(INTERVAL);
      const r = await tick(2, cursor);
      expect(r.requests).toBeLessThanOrEqual(2);
      cursor = r.value;
    }
    expect(cursor.pending).toBeUndefined();
    clock.advance(INTERVAL);
    const quiet = await tick(2, cursor);
    expect(quiet).toMatchObject({ requests: 1, value: { read: 0 } });
    expect(await counted()).toEqual({ created: 380, dupPoll: 0, dupWebhook: 0 });
  });

  it("counts a burst of 700 a second for 10 s with every tick's pages, exact within the margin and two ticks", async () => {
    // Ticks every 15 s, one of them 5 s into the burst; the burst's end is at T0 + 10 s.
    const TICK = 15_000;
    const end = T0 + 10_000;
    const run = async (maxPages: number) => {
      platform.events = [];
      const perTick: { at: number; counted: number; requests: number }[] = [];
      const ledger = new EventLedger({ ns: "b", registry: new Registry(), clock, horizonMs: HOUR });
      const ctx = { ...ctxFor(maxPages), eventSink: ledger };
      let cursor: EventCursor | undefined;
      clock.set(T0 - 55_000);
      for (let n = 0; n < 14; n++) {
        const from = Math.max(T0, clock.now() - TICK);
        const to = Math.min(end, clock.now());
        for (let at = from; at < to; at += 10_000 / 6_930) add(Math.floor(at));
        const r = await eventsCollector.read(ctx, cursor);
        cursor = r.value;
        perTick.push({ at: clock.now(), counted: ledger.remembered, requests: r.requests });
        clock.advance(TICK);
      }
      return perTick;
    };
    const exactAt = (ticks: { at: number; counted: number }[]) =>
      ticks.find((t) => t.counted === platform.events.length)?.at ?? Number.POSITIVE_INFINITY;
    // The default pages: every tick after the burst counts 7 pages' worth or more until exact,
    // and the whole burst is counted within the settle margin plus two ticks.
    const pages = pollSettings({}).eventsMaxPages;
    const ticks = await run(pages);
    expect(platform.events).toHaveLength(6_930);
    for (const [i, t] of ticks.entries()) {
      expect(t.requests).toBeLessThanOrEqual(pages);
      const before = ticks[i - 1];
      if (t.at > end && before && before.counted < 6_930)
        expect(t.counted - before.counted).toBeGreaterThanOrEqual(
          Math.min(700, 6_930 - before.counted),
        );
    }
    expect(exactAt(ticks) - end).toBeLessThanOrEqual(EVENTS_SETTLE_MS + 2 * TICK);
    // Fewer pages carry less a tick, but still count on every tick until exact.
    const ten = await run(10);
    expect(exactAt(ten) - end).toBeLessThanOrEqual(120_000);
  });

  it("goes on at the right place after a cut walk whose pages were shifted by arrivals", async () => {
    for (let i = 0; i < 250; i++) add(T0 - 4 * MIN + i * 100);
    // 5 arrive after the first page of a walk the page bound cuts after two pages.
    platform.afterPage = (served) => {
      if (served === 1) for (let i = 0; i < 5; i++) add(T0 + 1_000 + i);
    };
    let cursor = (await tick(2)).value;
    expect(cursor.pending).toBeDefined();
    platform.afterPage = undefined;
    // A bounded number of ticks until the cut walk completes.
    for (let n = 0; n < 5 && cursor.pending !== undefined; n++) {
      clock.advance(INTERVAL);
      cursor = (await tick(2, cursor)).value;
    }
    expect(cursor.pending).toBeUndefined();
    // Every one of the 255 counted, none twice: the 5 just below the cut are not skipped.
    expect(await counted()).toEqual({ created: 255, dupPoll: 0, dupWebhook: 0 });
  });

  it("counts an event stamped far in the future, and it does not stop the later reads", async () => {
    add(T0 - MIN);
    add(T0 + 365 * 24 * 60 * MIN);
    const first = await tick();
    expect(first.value.read).toBe(2);
    expect(first.value.floor).toBe(T0 - MIN);
    add(T0 + 10_000);
    add(T0 + 20_000);
    clock.advance(INTERVAL);
    const second = await tick(10, first.value);
    expect(second.value.read).toBe(2);
    expect(await counted()).toEqual({ created: 4, dupPoll: 0, dupWebhook: 0 });
  });

  it("counts an event that came by webhook first once, when the look-back reads it again", async () => {
    add(T0 - MIN);
    add(T0 - 2 * MIN, { id: "from-both" });
    ledger.accept(
      {
        id: "from-both",
        type: "created",
        sandboxId: "x",
        templateId: "base",
        timestamp: T0 - 2 * MIN,
      },
      "webhook",
    );
    const r = await tick();
    expect(r.value).toMatchObject({ read: 2, accepted: 1 });
    expect(await counted()).toEqual({ created: 2, dupPoll: 1, dupWebhook: 0 });
  });

  it("drops a bad record among good ones, counts it, and keeps the offsets true", async () => {
    for (let i = 0; i < 120; i++) add(T0 - 4 * MIN + i * 100);
    add(T0 - 3 * MIN, { sandboxId: undefined });
    const r = await tick();
    expect(r.value.read).toBe(120);
    expect(r.requests).toBe(2);
    expect(control.invalid.get("event", "sandbox_id")).toBe(1);
    expect((await counted()).created).toBe(120);
  });

  it("counts killed events by the platform's reason", async () => {
    add(T0 - MIN, {
      type: "sandbox.lifecycle.killed",
      sandboxId: "dead",
      eventData: { kill_reason: "orphaned", execution: { execution_time: 42_000 } },
    });
    await tick();
    expect(ledger.killReason("dead")).toBe("orphaned");
    expect(await registry.metrics()).toContain(
      'sandbox_sandboxes_killed_total{template="base",reason="orphaned"} 1',
    );
    expect(ledger.teamId()).toBe("team-1");
  });

  it("is unsupported where the platform answers 404, through the poller's capability logic", async () => {
    platform.status = 404;
    const p = testPoller({
      reader: control,
      clock,
      intervalMs: INTERVAL,
      poll: { events: true, eventsLookbackMs: LOOKBACK, eventsMaxPages: 10 },
      collectors: [eventsCollector],
      eventSink: ledger,
    });
    const snap = await tickAndWait(p);
    expect(snap.collectors.events).toMatchObject({ unsupported: true, success: false });
    // Not asked again before the re-check.
    const asked = platform.queries.length;
    clock.advance(INTERVAL);
    await tickAndWait(p);
    expect(platform.queries.length).toBe(asked);
  });

  it("does not run unless poll.events named it", async () => {
    const p = testPoller({
      reader: control,
      clock,
      intervalMs: INTERVAL,
      collectors: [eventsCollector],
    });
    const snap = await tickAndWait(p);
    expect(snap.collectors.events).toMatchObject({ skipped: true });
    expect(platform.queries).toHaveLength(0);
  });

  it("is wired by poll.events: the exporter's ledger counts what the collector read, at the next scrape", async () => {
    add(systemClock.now() - MIN, {
      type: "sandbox.lifecycle.killed",
      eventData: { kill_reason: "timeout", execution: { execution_time: 300_000 } },
    });
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b", "--poll-events"],
      env: { SANDBOX_API_URL: url, SANDBOX_API_KEY: "" },
    });
    const app = await startQuiet(config);
    try {
      expect(app.events).toBe(app.metrics.events);
      await app.runCycle();
      expect(app.poller.latest?.collectors.events).toMatchObject({ success: true });
      const text = await scrape(app);
      expect(text).toContain('sandbox_sandboxes_killed_total{template="base",reason="timeout"} 1');
      expect(text).toContain(
        'sandbox_sandbox_execution_seconds_bucket{le="600",template="base"} 1',
      );
    } finally {
      await app.stop();
    }
  });

  it("reads events on every shard and keeps its own sandboxes': shard 1 of 2 counts only those", async () => {
    const now = systemClock.now();
    const ids = Array.from({ length: 40 }, (_, i) => add(now - MIN + i, { sandboxId: `sb-${i}` }));
    const mine = ids.filter((_, i) => inShard(`sb-${i}`, 1, 2)).length;
    expect(mine).toBeGreaterThan(0);
    expect(mine).toBeLessThan(40);
    const { config } = loadConfig({
      argv: [
        ...["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b", "--poll-events"],
        ...["--shard", "1", "--total-shards", "2"],
      ],
      env: { SANDBOX_API_URL: url, SANDBOX_API_KEY: "" },
    });
    const app = await startQuiet(config);
    try {
      await app.runCycle();
      expect(app.poller.latest?.collectors.events).toMatchObject({ success: true });
      const text = await scrape(app);
      expect(text).toContain(
        `sandbox_lifecycle_events_total{type="created",template="base"} ${mine}`,
      );
      // Another shard's events still name the team.
      expect(app.events?.teamId()).toBe("team-1");
    } finally {
      await app.stop();
    }
  });
});
