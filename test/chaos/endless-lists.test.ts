// Chaos: a looping or endless inventory list against a hostile E2B-shaped server written apart
// from the simulator, over loopback, with the daemon's one request budget in front of it. GET
// /snapshots hands out a next token that never repeats, GET /v2/templates one that loops, while
// a 3,000-sandbox walk runs beside them. The inventory reads stop at their page limit each tick
// and go on from the saved token next tick; they go in the background of the budget, so the walk's
// pages are never queued behind them (asserted on the order of requests, not on wall time); what
// was read is published with a truncated flag; /volumes is published beside the endless list;
// the templates read so far are kept when v2 loops; /status names the truncated lists.
import { createServer } from "node:http";
import { Agent } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PollSettings } from "../../src/collect/collector.js";
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import { storageCollector } from "../../src/collect/storage/storage.js";
import { templatesCollector } from "../../src/collect/templates/templates.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { BACKGROUND_SHARE, RequestLimiter } from "../../src/platform/control/limiter.js";
import { statusReport } from "../../src/server/status.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { advanceAndTick } from "../helpers/cycle.js";
import { listenLoopback } from "../helpers/loopback.js";
import { testPoller } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

/** Long enough in real time that the deadline (one interval) never cuts a read here. */
const INTERVAL = 5_000;
const SANDBOXES = 3_000;
const PAGE = 100;
const PAGES_PER_TICK = 5;
/**
 * The budget paces the walk: a token every 50 ms, far longer than a loopback page takes, so each
 * walk page waits for its token; the walk's 30 pages take 1.5 s of it.
 */
const RATE = 20;
const BURST = 1;

/** What the hostile server does, and every request it got in order ("<path> <token>"). */
interface Hostile {
  /** Sandboxes the walk lists (3,000 where the walk is watched, one page elsewhere). */
  sandboxes: number;
  templates: "paged" | "loop";
  log: string[];
}

let h: Hostile;
let clock: FakeClock;
let control: ControlClient;
let close: () => Promise<void>;

function sandbox(i: number): Record<string, unknown> {
  return {
    sandboxID: `sb-${String(i).padStart(5, "0")}`,
    templateID: "base",
    startedAt: new Date(1_790_000_000_000 - i * 1_000).toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    metadata: {},
    state: "running",
  };
}

/** Answers one request: [status, body, next token]. */
function answer(url: URL): [number, unknown, string | undefined] {
  const token = url.searchParams.get("nextToken") ?? undefined;
  const from = Number(token ?? 0);
  switch (url.pathname) {
    case "/v2/sandboxes": {
      const page = Array.from({ length: Math.min(PAGE, h.sandboxes - from) }, (_, k) =>
        sandbox(from + k),
      );
      return [200, page, from + PAGE < h.sandboxes ? String(from + PAGE) : undefined];
    }
    case "/snapshots": {
      // Endless: a full page of new snapshots and a token never handed out before.
      const page = Array.from({ length: PAGE }, (_, k) => ({
        snapshotID: `snap-${from + k}`,
        names: [],
      }));
      return [200, page, String(from + PAGE)];
    }
    case "/volumes":
      return [200, [{ volumeID: "v-1", name: "data" }], undefined];
    case "/v2/templates": {
      const ids = Array.from({ length: 10 }, (_, k) => `tpl-${from + k}`);
      const page = ids.map((id) => ({ templateID: id, buildID: `b-${id}`, buildStatus: "ready" }));
      if (h.templates === "paged") return [200, page, from < 20 ? String(from + 10) : undefined];
      // Loops: page 3 sends back the token of page 2.
      return [200, page, from >= 20 ? "10" : String(from + 10)];
    }
    default:
      return [404, { code: 404, message: "no route" }, undefined];
  }
}

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    h.log.push(`${url.pathname} ${url.searchParams.get("nextToken") ?? "-"}`);
    const [status, body, next] = answer(url);
    res.writeHead(status, {
      "content-type": "application/json",
      ...(next !== undefined ? { "x-next-token": next } : {}),
    });
    res.end(JSON.stringify(body));
  });
  const l = await listenLoopback(server);
  const limiter = new RequestLimiter({
    ratePerSecond: RATE,
    burst: BURST,
    now: () => performance.now(),
  });
  control = testControl({
    apiUrl: l.url,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    dispatcher: new Agent(),
    limiter,
  });
  close = async () => {
    await control.close();
    await l.close();
  };
});
beforeEach(() => {
  h = { sandboxes: PAGE, templates: "paged", log: [] };
});
afterAll(() => close());

function poller(poll: Partial<PollSettings> = {}): Poller {
  return testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    collectors: [storageCollector, templatesCollector],
    poll: { storage: true, listPagesPerTick: PAGES_PER_TICK, ...poll },
  });
}

const cycle = (p: Poller): Promise<Snapshot> => advanceAndTick(p, clock, INTERVAL);

async function scrape(s: Snapshot): Promise<string> {
  const { metrics } = metricsWith();
  metrics.update(s);
  return scrapeText(metrics, "prometheus");
}

/** Requests of `path` in the log. */
const of = (path: string) => h.log.filter((l) => l.startsWith(`${path} `));

describe("chaos: an endless GET /snapshots beside a 3,000-sandbox walk", () => {
  it("stops at its page limit each tick, never ahead of the walk, and goes on where it stopped", async () => {
    h.sandboxes = SANDBOXES;
    const p = poller();
    const s = await cycle(p);
    const walk = of("/v2/sandboxes");
    expect(walk, "walk pages").toHaveLength(SANDBOXES / PAGE);
    expect(s.collectors.sandboxes).toMatchObject({ success: true, requests: SANDBOXES / PAGE });
    expect(of("/snapshots"), "snapshot pages this tick").toHaveLength(PAGES_PER_TICK);
    // The order of requests: between the walk's first page and its last, the endless list got
    // at most one (it goes only while no page of the walk waits for a token).
    const first = h.log.indexOf(walk[0] as string);
    const last = h.log.indexOf(walk.at(-1) as string);
    const during = h.log.slice(first, last).filter((l) => l.startsWith("/snapshots ")).length;
    expect(during, "snapshot pages sent while the walk ran").toBeLessThanOrEqual(1);
    // The next tick goes on from the token the last one stopped at, and stops again.
    const stoppedAt = PAGES_PER_TICK * PAGE;
    h.log = [];
    const next = await cycle(p);
    expect(of("/snapshots")[0]).toBe(`/snapshots ${stoppedAt}`);
    expect(of("/snapshots")).toHaveLength(PAGES_PER_TICK);
    // What was read is published, flagged; /volumes is not hidden by it.
    expect(next.storage?.snapshots).toEqual({ count: 2 * PAGES_PER_TICK * PAGE, complete: false });
    expect(next.storage?.volumes).toEqual({ count: 1, complete: true });
    expect(next.collectors.storage).toMatchObject({ success: true });
    const text = await scrape(next);
    expect(linesOf(text, "sandbox_storage_volumes")).toEqual(["sandbox_storage_volumes 1"]);
    expect(linesOf(text, "sandbox_exporter_list_truncated").sort()).toEqual([
      'sandbox_exporter_list_truncated{list="/snapshots"} 1',
      'sandbox_exporter_list_truncated{list="/v2/templates"} 0',
      'sandbox_exporter_list_truncated{list="/volumes"} 0',
    ]);
    const status = statusReport(next, clock.now()) as {
      collectors: Record<string, { state: string; truncated?: unknown[] }>;
    };
    expect(status.collectors.storage?.state).toBe("ok");
    expect(status.collectors.storage?.truncated).toEqual([
      expect.objectContaining({ list: "/snapshots", code: "ERR_PAGING_PAGE_LIMIT", resumes: true }),
    ]);
  });

  it("ends a pass at poll.maxPages and starts over, failing that tick with what it read kept", async () => {
    const p = poller({ maxPages: 2 * PAGES_PER_TICK + 5 });
    await cycle(p);
    await cycle(p);
    h.log = [];
    const s = await cycle(p);
    expect(of("/snapshots")).toHaveLength(5);
    expect(s.collectors.storage).toMatchObject({
      success: false,
      error: { code: "ERR_PAGING_CEILING" },
    });
    expect(s.storage?.snapshots?.count).toBe((2 * PAGES_PER_TICK + 5) * PAGE);
    expect(s.storage?.volumes?.count).toBe(1);
    h.log = [];
    await cycle(p);
    expect(of("/snapshots")[0], "a new pass from the first page").toBe("/snapshots -");
  });
});

describe("chaos: a looping GET /v2/templates", () => {
  it("keeps the last complete list, fails naming the loop, and says truncated", async () => {
    const p = poller({ storage: false });
    const good = await cycle(p);
    expect(good.templates?.map((t) => t.id)).toHaveLength(30);
    h.templates = "loop";
    const s = await cycle(p);
    expect(s.collectors.templates).toMatchObject({
      success: false,
      error: { code: "ERR_PAGING_REPEATED_TOKEN" },
    });
    expect(s.templates?.map((t) => t.id)).toEqual(good.templates?.map((t) => t.id));
    const text = await scrape(s);
    expect(linesOf(text, "sandbox_template_info")).toHaveLength(30);
    const status = statusReport(s, clock.now()) as {
      collectors: Record<string, { truncated?: unknown[] }>;
    };
    expect(status.collectors.templates?.truncated).toEqual([
      expect.objectContaining({ list: "/v2/templates", code: "ERR_PAGING_REPEATED_TOKEN" }),
    ]);
  });

  it("publishes what it read when it loops from the first read", async () => {
    h.templates = "loop";
    const s = await cycle(poller({ storage: false }));
    // Pages 1 and 2 (the third repeats page 2's token and is left out).
    expect(s.templates?.map((t) => t.id)).toHaveLength(20);
    expect(of("/v2/templates")).toHaveLength(3);
    const text = await scrape(s);
    expect(linesOf(text, "sandbox_template_info")).toHaveLength(20);
  });
});

describe("the request budget's background share", () => {
  it("grants background reads at most their share of the rate, and a waiting request first", async () => {
    let t = 0;
    const order: string[] = [];
    const limiter = new RequestLimiter({
      ratePerSecond: 100,
      burst: 10,
      now: () => t,
      // Fake time: a pause moves the clock.
      sleep: async (ms) => {
        t += ms;
      },
    });
    const reads = Array.from({ length: 50 }, (_, i) =>
      limiter.acquire("poll", { background: true }).then(() => order.push(`bg${i}`)),
    );
    // A walk page asked after the background reads queued goes before all but the first.
    const walk = limiter.acquire("poll").then(() => order.push("walk"));
    await Promise.all([...reads, walk]);
    expect(order.indexOf("walk")).toBeLessThanOrEqual(1);
    // 50 reads at 20 % of 100/s, the bucket's 2 aside: at least 2.4 s of (fake) time.
    expect(t).toBeGreaterThanOrEqual(((50 - 2) / (100 * BACKGROUND_SHARE)) * 1000 - 1);
  });
});
