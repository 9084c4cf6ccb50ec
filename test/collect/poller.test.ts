import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { TICK_COLLECTORS } from "../../src/catalog.js";
import { type Poller, type PollerOptions, smallerPageLimit } from "../../src/collect/poller.js";
import { SandboxTable } from "../../src/collect/sandbox-table.js";
import type { CollectorName, Snapshot } from "../../src/collect/snapshot.js";
import { collectorStatusFamilies } from "../../src/metrics/collector-status-families.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { PlatformHttpError } from "../../src/platform/http-errors.js";
import { PROBE_TAG_KEY } from "../../src/platform/types.js";
import { statusReport } from "../../src/server/status.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { inShard } from "../../src/util/shard.js";
import { testControl } from "../helpers/control.js";
import { type TestPollerOptions, testPoller, tickAndWait } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 1_000;
let sim: Simulator;
let clock: FakeClock;
let control: ControlClient;

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  sim = await startSimulator({ sandboxes: 100, templates: 2, nodes: 2, clock });
  control = testControl({
    apiUrl: sim.apiUrl,
    clock,
    dispatcher: new Agent(),
  });
});
afterEach(() => {
  sim.faults.clear();
  sim.state.setSandboxCount(100);
});
afterAll(async () => {
  await control.close();
  await sim.close();
});

/** A poller over the simulator; every published snapshot is kept. */
function poller(over: Partial<TestPollerOptions> = {}): { p: Poller; published: Snapshot[] } {
  const published: Snapshot[] = [];
  const p = testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    onSnapshot: (s) => {
      published.push(s);
    },
    ...over,
    poll: { pageLimit: 10, ...over.poll },
  });
  return { p, published };
}

const cycle = tickAndWait;

describe("Poller", () => {
  it("publishes one snapshot per tick, walk included, when the walk keeps up", async () => {
    const { p, published } = poller();
    const s = await cycle(p);
    expect(published).toHaveLength(1);
    expect(s.walked).toBe(true);
    expect(s.sandboxesComplete).toBe(true);
    expect(s.sandboxes?.length).toBe(100);
    expect([...s.refreshed].sort()).toEqual(
      ["health", "nodes", "overview", "sandboxes", "templates"].sort(),
    );
  });

  it("refreshes the small collectors while a walk hangs, and marks old walk data stale", async () => {
    // A short interval: a tick waits half of one (real time) for its reads and its walk
    // together, before publishing; a read has one interval (real time) before its deadline.
    const interval = 400;
    const { p, published } = poller({ poll: { pageLimit: 100 }, intervalMs: interval });
    await cycle(p);
    sim.faults.route("GET /v2/sandboxes", { latencyMs: 3_000 });
    const before = sim.counters.get("GET /health");
    clock.advance(interval);
    const first = await p.tick();
    expect(first.walkBusy).toBe(false);
    clock.advance(interval);
    const second = await p.tick();
    // The second tick found the walk still running: it did not start another one...
    expect(second.walkBusy).toBe(true);
    // ...but health was read on both ticks (on a loaded machine the tick may publish before the
    // simulator has read the second request), and published without the walk.
    await vi.waitFor(() => expect(sim.counters.get("GET /health") - before).toBe(2), {
      timeout: 2_000,
    });
    const during = p.latest as Snapshot;
    expect(during.walked).toBe(false);
    expect(during.refreshed).not.toContain("sandboxes");
    expect(during.collectors.health).toMatchObject({ success: true, stale: false });
    expect(during.collectors.sandboxes).toMatchObject({ success: true, stale: false });
    clock.advance(interval);
    await p.tick();
    // Three intervals since the last successful walk: stale although no attempt failed.
    expect((p.latest as Snapshot).collectors.sandboxes).toMatchObject({
      success: true,
      stale: true,
    });
    await p.walkDone();
    // The slow walk ended after its tick and published a snapshot of its own.
    const last = published.at(-1) as Snapshot;
    expect(last.walked).toBe(true);
    expect(last.refreshed).toEqual(["sandboxes"]);
    // /status counts poll cycles as poll_cycles_total does: snapshots that carried a walk.
    const { metrics } = metricsWith();
    for (const s of published) metrics.update(s);
    const total = linesOf(await scrapeText(metrics), "sandbox_exporter_poll_cycles_total");
    const doc = statusReport(last, clock.now()) as { cycle: number };
    expect(total).toEqual([`sandbox_exporter_poll_cycles_total ${doc.cycle}`]);
    expect(published.filter((s) => s.walked)).toHaveLength(doc.cycle);
    expect(last.cycle).toBeGreaterThan(doc.cycle);
  });

  it("backs off failed walks, doubling from one interval up to the ceiling, and resets on success", async () => {
    const { p } = poller();
    sim.faults.route("GET /v2/sandboxes", { status: 500 });
    const start = sim.counters.get("GET /v2/sandboxes");
    const walkedAt: number[] = [];
    for (let t = 0; t <= 12; t++) {
      const n = sim.counters.get("GET /v2/sandboxes");
      await cycle(p);
      if (sim.counters.get("GET /v2/sandboxes") > n) walkedAt.push(t);
      clock.advance(INTERVAL);
    }
    // Waits of 1, 2, 4, then 4 (the ceiling) intervals.
    expect(walkedAt).toEqual([0, 1, 3, 7, 11]);
    expect(sim.counters.get("GET /v2/sandboxes") - start).toBe(5);
    expect(p.walkBackoffUntil).toBeGreaterThan(clock.now());
    sim.faults.clear();
    clock.advance(4 * INTERVAL);
    expect((await cycle(p)).sandboxesComplete).toBe(true);
    expect(p.walkBackoffUntil).toBe(0);
  });

  it("discards a walk whose count fell sharply when a second walk does not confirm it", async () => {
    const drops: boolean[] = [];
    // A proxy that ends one walk after its first page: the list looks 90 % smaller.
    let cutOnce = false;
    const reader: PollerOptions["reader"] = Object.create(control);
    reader.listSandboxPage = async (q, o) => {
      const page = await control.listSandboxPage(q, o);
      if (!cutOnce || q.nextToken !== undefined) return page;
      cutOnce = false;
      return { size: page.size, items: page.items };
    };
    const { p } = poller({ reader, onDrop: (confirmed) => drops.push(confirmed) });
    expect((await cycle(p)).sandboxes?.length).toBe(100);
    cutOnce = true;
    const pages = sim.counters.get("GET /v2/sandboxes");
    const s = await cycle(p);
    expect(drops).toEqual([false]);
    expect(s.sandboxes?.length).toBe(100);
    expect(s.sandboxesComplete).toBe(true);
    // One page of the cut walk, ten of the second.
    expect(sim.counters.get("GET /v2/sandboxes") - pages).toBe(11);
    expect(s.collectors.sandboxes.requests).toBe(11);
  });

  it("believes a real drop, down to an empty fleet, once a second walk sees it too", async () => {
    const drops: boolean[] = [];
    const { p } = poller({ onDrop: (confirmed) => drops.push(confirmed) });
    await cycle(p);
    sim.state.setSandboxCount(30);
    expect((await cycle(p)).sandboxes?.length).toBe(30);
    sim.state.setSandboxCount(20);
    // 30 -> 20 is a third, under the ratio: no second walk.
    expect((await cycle(p)).sandboxes?.length).toBe(20);
    sim.state.setSandboxCount(0);
    const empty = await cycle(p);
    expect(empty.sandboxes?.length).toBe(0);
    expect(empty.sandboxesComplete).toBe(true);
    expect(drops).toEqual([true, true]);
  });

  it("fails the walk, keeping the last list, when the confirming walk fails", async () => {
    const drops: boolean[] = [];
    let walks = 0;
    const failing: PollerOptions["reader"] = Object.create(control);
    failing.listSandboxPage = async (q, o) => {
      if (q.nextToken === undefined) walks++;
      if (walks === 3) sim.faults.route("GET /v2/sandboxes", { status: 503 });
      return control.listSandboxPage(q, o);
    };
    const { p, published } = poller({
      reader: failing,
      onDrop: (confirmed) => drops.push(confirmed),
    });
    await cycle(p);
    sim.state.setSandboxCount(10);
    // Walk 2 sees 10 of 100; walk 3, the confirmation, fails.
    const s = await cycle(p);
    expect(drops).toEqual([false]);
    expect(s.walked).toBe(true);
    expect(s.sandboxesComplete).toBe(false);
    expect(s.collectors.sandboxes).toMatchObject({ success: false, stale: true });
    expect(s.sandboxes?.length).toBe(100);
    expect(published.at(-1)).toBe(s);
  });
});

describe("the shard, applied at the list", () => {
  it("keeps only its own sandboxes, and reads nothing but the id of the others", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `sb-${i}`);
    // Every record carries an end time that does not parse: only a record normalized counts it.
    const body = JSON.stringify(ids.map((id) => ({ sandboxID: id, state: "running", endAt: "x" })));
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const dispatcher = new Agent();
    const reader = testControl({
      apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      clock,
      dispatcher,
    });
    try {
      const seen: string[] = [];
      for (const index of [0, 1, 2]) {
        const before = reader.invalid.entries().reduce((n, c) => n + c.count, 0);
        const { p } = poller({ reader, clusterWide: false, shard: { index, total: 3 } });
        const s = await cycle(p);
        const own = [...(s.sandboxes ?? [])].map((x) => x.id);
        expect(own.length).toBeGreaterThan(0);
        expect(own.every((id) => inShard(id, index, 3))).toBe(true);
        const counted = reader.invalid.entries().reduce((n, c) => n + c.count, 0) - before;
        expect(counted, "end times read: this shard's records only").toBe(own.length);
        seen.push(...own);
      }
      expect(seen.sort()).toEqual([...ids].sort());
    } finally {
      await dispatcher.close();
      server.close();
    }
  });
});

describe("bounds on a walk and on staleness", () => {
  it("abandons a walk that runs past poll.maxWalkMs as incomplete, counted, and keeps the last list", async () => {
    // Every page costs 100 ms of the fake clock: 10 pages of 10 would take a second.
    const slow: PollerOptions["reader"] = Object.create(control);
    slow.listSandboxPage = (q, o) => {
      clock.advance(100);
      return control.listSandboxPage(q, o);
    };
    let abandoned = 0;
    const limits: number[] = [];
    const { p } = poller({
      reader: slow,
      poll: { maxWalkMs: 450 },
      onWalkAbandoned: (limitMs) => {
        abandoned++;
        limits.push(limitMs);
      },
    });
    const pagesBefore = sim.counters.get("GET /v2/sandboxes");
    const s = await cycle(p);
    expect(s.collectors.sandboxes).toMatchObject({
      success: false,
      error: { code: "ERR_PAGING_WALK_TIMEOUT" },
    });
    expect(s.sandboxesComplete).toBe(false);
    expect(abandoned).toBe(1);
    // The bound the walk used is the one the log names (poll.maxWalkMs, else its default).
    expect(limits).toEqual([450]);
    // Pages 1-5 fit in 450 ms (the fifth asked at 400 ms); no page is asked after the bound.
    expect(sim.counters.get("GET /v2/sandboxes") - pagesBefore).toBe(5);

    // The default bound is four poll intervals: the same walk fits in it.
    const { p: q } = poller({ reader: slow });
    const ok = await cycle(q);
    expect(ok.sandboxesComplete).toBe(true);
    expect(ok.sandboxes?.length).toBe(100);
  });

  it("reads collect_stale at scrape time: no published tick is needed to turn it to 1", async () => {
    const { metrics, clock: mclock } = metricsWith();
    const { p } = poller({ onSnapshot: (s) => metrics.update(s as Snapshot) });
    await cycle(p);
    mclock.set(clock.now());
    const fresh = await scrapeText(metrics);
    expect(linesOf(fresh, "sandbox_exporter_collect_stale")).toContain(
      'sandbox_exporter_collect_stale{collector="sandboxes"} 0',
    );
    // Ticks stuck (waiting on the request budget, say): nothing publishes, time passes.
    mclock.set(clock.now() + 2 * INTERVAL + 1);
    const later = await scrapeText(metrics);
    for (const c of ["health", "overview", "nodes", "templates", "sandboxes"])
      expect(linesOf(later, "sandbox_exporter_collect_stale")).toContain(
        `sandbox_exporter_collect_stale{collector="${c}"} 1`,
      );
  });
});

describe("capability detection", () => {
  // Every optional tick collector of the registry, by the endpoint that tells (health's any status
  // is an answer: it is never unsupported). A new collector must name its endpoint here.
  const ENDPOINTS: Partial<Record<CollectorName, string>> = {
    overview: "GET /cluster/overview",
    nodes: "GET /nodes",
    templates: "GET /templates",
  };
  // The opt-in collectors have capability cases of their own: templateBuilds (asks only about a
  // failed build on E2B) in test/collect/template-builds.test.ts, events in events.test.ts,
  // teamMetrics (needs a team id) in team-metrics.test.ts, storage in storage.test.ts.
  const OWN_CASES = new Set<string>([
    "health",
    ...TICK_COLLECTORS.filter((c) => c.optIn).map((c) => c.name),
  ]);
  const optional = TICK_COLLECTORS.filter((c) => c.optional && !OWN_CASES.has(c.name));

  it("knows the endpoint of every optional collector", () => {
    expect(optional.map((c) => c.name).filter((n) => ENDPOINTS[n] === undefined)).toEqual([]);
  });

  it.each(optional.map((c) => [c.name, ENDPOINTS[c.name] as string] as const))(
    "stops polling %s when the platform does not serve it, re-checks it slowly, and takes it back when it answers",
    async (name, route) => {
      const changes: Array<[string, boolean]> = [];
      const { p } = poller({ onSupport: (c, supported) => changes.push([c, supported]) });
      sim.faults.route(route, { status: 404 });
      const first = await cycle(p);
      expect(first.collectors[name]).toMatchObject({
        unsupported: true,
        stale: false,
        success: false,
      });
      expect(changes).toEqual([[name, false]]);
      // /status says unsupported: a state of its own, neither failed nor stale (docs/e2b.md).
      const doc = statusReport(first, clock.now()) as { collectors: Record<string, unknown> };
      expect(doc.collectors[name]).toMatchObject({
        state: "unsupported",
        success: null,
        stale: false,
        error: null,
        unsupportedAnswer: { code: "ERR_PLATFORM_NOT_FOUND" },
      });
      const asked = sim.counters.get(route);
      for (let i = 0; i < 5; i++) {
        clock.advance(INTERVAL);
        expect((await cycle(p)).collectors[name].unsupported).toBe(true);
      }
      // Not asked again before the re-check, and logged once.
      expect(sim.counters.get(route)).toBe(asked);
      expect(changes).toHaveLength(1);
      clock.advance(10 * INTERVAL);
      await cycle(p);
      expect(sim.counters.get(route)).toBe(asked + 1);
      sim.faults.clear();
      clock.advance(10 * INTERVAL);
      const back = await cycle(p);
      expect(back.collectors[name]).toMatchObject({ success: true, stale: false });
      expect(back.collectors[name].unsupported).toBeUndefined();
      expect(changes).toEqual([
        [name, false],
        [name, true],
      ]);
    },
  );

  it("treats a 403 or 404 of an endpoint that worked before as a failure, not as unsupported", async () => {
    const { p } = poller();
    await cycle(p);
    sim.faults.route("GET /nodes", { status: 403 });
    clock.advance(INTERVAL);
    const s = await cycle(p);
    expect(s.collectors.nodes).toMatchObject({ success: false, stale: true });
    expect(s.collectors.nodes.unsupported).toBeUndefined();
  });

  it("never calls a timeout or a 5xx unsupported", async () => {
    const { p } = poller();
    sim.faults.route("GET /templates", { status: 503 });
    const s = await cycle(p);
    expect(s.collectors.templates).toMatchObject({ success: false, stale: true });
    expect(s.collectors.templates.unsupported).toBeUndefined();
  });
});

describe("page size", () => {
  it("lowers a page size the platform refuses to the one it names, once, and keeps it", async () => {
    const sizes: Array<[number, number]> = [];
    // A platform capping pages at 20 the way E2B caps them at 100.
    const capped: PollerOptions["reader"] = Object.create(control);
    capped.listSandboxPage = async (q, o) => {
      if ((q.limit ?? 0) > 20)
        throw new PlatformHttpError(
          "/v2/sandboxes",
          "GET",
          400,
          '{"message":"limit must be at most 20"}',
        );
      return control.listSandboxPage(q, o);
    };
    const { p } = poller({
      reader: capped,
      poll: { pageLimit: 50 },
      onPageLimit: (a, b) => sizes.push([a, b]),
    });
    const s = await cycle(p);
    expect(s.sandboxesComplete).toBe(true);
    expect(s.sandboxes?.length).toBe(100);
    expect(sizes).toEqual([[50, 20]]);
    clock.advance(INTERVAL);
    await cycle(p);
    expect(sizes).toHaveLength(1);
  });

  it("leaves the page size alone for a 400 about something else, or from another endpoint", () => {
    const bad = (endpoint: string, body: string) =>
      smallerPageLimit(new PlatformHttpError(endpoint, "GET", 400, body), 100);
    expect(bad("/v2/sandboxes", '{"message":"invalid next token"}')).toBeUndefined();
    expect(bad("/nodes", '{"message":"limit must be at most 20"}')).toBeUndefined();
    expect(bad("/v2/sandboxes", '{"message":"limit too large"}')).toBe(50);
    expect(
      smallerPageLimit(new PlatformHttpError("/v2/sandboxes", "GET", 400, "limit"), 1),
    ).toBeUndefined();
    expect(
      smallerPageLimit(new PlatformHttpError("/v2/sandboxes", "GET", 400, "limit <= 100"), 1000),
    ).toBe(100);
  });
});

describe("the platform's own running count", () => {
  it("keeps X-Total-Running of the walk and exports it beside the walk's own count", async () => {
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? "", "http://x").pathname;
      if (path.endsWith("/v2/sandboxes")) {
        res.writeHead(200, { "content-type": "application/json", "x-total-running": "5" });
        res.end(
          JSON.stringify([
            { sandboxID: "a", templateID: "t", state: "running" },
            { sandboxID: "b", templateID: "t", state: "running" },
            { sandboxID: "c", templateID: "t", state: "paused" },
          ]),
        );
        return;
      }
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(path.endsWith("/health") ? "" : "[]");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    const c = testControl({
      apiUrl: `http://127.0.0.1:${port}`,
      timeoutMs: 2_000,
      apiPrefix: "",
      clock,
      dispatcher: new Agent(),
    });
    const { p } = poller({ reader: c, clusterWide: false });
    const s = await cycle(p);
    expect(s.totalRunning).toBe(5);
    const text = collectorStatusFamilies("sandbox", s)
      .map((f) => f.render("prometheus"))
      .join("");
    expect(text).toContain("sandbox_platform_sandboxes_running_reported 5\n");
    expect(text).toContain("sandbox_exporter_walk_running_difference 3\n");
    await c.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
});

describe("capability detection of an endpoint that refuses us", () => {
  it("calls a 401 unsupported once the sandbox walk shows the key works (E2B's /nodes without an admin token)", async () => {
    const { p } = poller();
    sim.faults.route("GET /nodes", { status: 401 });
    await cycle(p);
    clock.advance(INTERVAL);
    const s = await cycle(p);
    expect(s.collectors.nodes).toMatchObject({ unsupported: true, stale: false });
  });

  it("never calls a 401 unsupported while the walk fails too (a bad key must alert)", async () => {
    const { p } = poller();
    sim.faults.route("GET /nodes", { status: 401 });
    sim.faults.route("GET /v2/sandboxes", { status: 401 });
    for (let i = 0; i < 3; i++) {
      const s = await cycle(p);
      expect(s.collectors.nodes.unsupported).toBeUndefined();
      expect(s.collectors.nodes).toMatchObject({ success: false, stale: true });
      clock.advance(10 * INTERVAL);
    }
  });
});

describe("end times over the wire", () => {
  const MIN = 60_000;
  /** Non-zero samples of a family, without the family name. */
  const nonZero = (text: string, name: string) =>
    linesOf(text, name)
      .filter((l) => !l.endsWith(" 0"))
      .map((l) => l.slice(name.length));

  it.each([
    ["a slim walk into a compact table", true],
    ["a walk of whole records", false],
  ])(
    "carries endAt and the probe tag through %s, into ending-soon gauges and disappearance reasons",
    async (_, compact) => {
      sim.state.setSandboxCount(0);
      const template = sim.state.templates[0]?.templateID as string;
      const t = clock.now();
      const add = (sandboxID: string, over: Record<string, unknown> = {}) =>
        sim.state.addSandbox({ sandboxID, templateID: template, endAt: t + 60 * MIN, ...over });
      add("sb-expires", { endAt: t + 10 * MIN });
      add("sb-killed");
      add("sb-paused", { state: "paused" });
      add("sb-probe", { metadata: { [PROBE_TAG_KEY]: "default", team: "ml" } });
      // An end time of 0 reaches the exporter as 1970-01-01T00:00:00Z, which means none.
      add("sb-no-end", { endAt: 0 });
      add("sb-soon", { endAt: t + 4 * MIN });
      add("sb-later");
      const { metrics } = metricsWith({ perSandboxMetrics: !compact });
      const { p } = poller({
        compactSandboxes: compact,
        onSnapshot: (s) => metrics.update(s),
      });
      const first = await cycle(p);
      expect(first.sandboxes instanceof SandboxTable).toBe(compact);
      const before = await scrapeText(metrics);
      expect(nonZero(before, "sandbox_sandboxes_ending_soon")).toEqual([
        `{state="running",template="${template}"} 1`,
      ]);
      // Every group has a sandbox with an endAt: 0, not absent, where none ends soon.
      expect(linesOf(before, "sandbox_sandboxes_ending_soon")).toContain(
        `sandbox_sandboxes_ending_soon{state="paused",template="${template}"} 0`,
      );
      const ends = linesOf(before, "sandbox_sandbox_end_timestamp_seconds");
      if (compact) expect(ends).toEqual([]);
      else {
        expect(ends).toHaveLength(6);
        expect(ends).toContain(
          `sandbox_sandbox_end_timestamp_seconds{sandbox_id="sb-soon"} ${(t + 4 * MIN) / 1000}`,
        );
        expect(ends.some((l) => l.includes("sb-no-end"))).toBe(false);
      }

      for (const id of ["sb-expires", "sb-killed", "sb-paused", "sb-probe", "sb-no-end"])
        sim.state.removeSandbox(id);
      clock.advance(11 * MIN);
      await cycle(p);
      const after = await scrapeText(metrics);
      expect(nonZero(after, "sandbox_sandboxes_disappeared_total")).toEqual(
        ["early", "expired", "paused", "probe", "unknown"].map(
          (r) => `{template="${template}",reason="${r}"} 1`,
        ),
      );
      // sb-soon is past its end now (overdue, not ending soon); sb-later ends in 49 minutes.
      expect(linesOf(after, "sandbox_sandboxes_ending_soon")).toEqual([
        `sandbox_sandboxes_ending_soon{state="running",template="${template}"} 0`,
      ]);
    },
  );
});
