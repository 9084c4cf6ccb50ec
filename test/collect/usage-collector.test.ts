import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema } from "../../src/catalog.js";
import type { Poller, PollerOptions } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import { USAGE_BATCH, usageBatches } from "../../src/collect/usage-collector.js";
import { collectorStatusFamilies } from "../../src/metrics/collector-status-families.js";
import type { ExporterMetrics } from "../../src/metrics/exporter-metrics.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { PlatformBodyError } from "../../src/platform/http-errors.js";
import type { SandboxUsage } from "../../src/platform/types.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { sandboxUsage } from "../../src/simulator/usage.js";
import { FakeClock } from "../../src/util/clock.js";
import { inShard } from "../../src/util/shard.js";
import { testControl } from "../helpers/control.js";
import { type TestPollerOptions, testPoller, tickAndWait } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 1_000;
const USAGE_EVERY = 5 * INTERVAL;
const FLEET = 600;
const USAGE = "GET /sandboxes/metrics";
let sim: Simulator;
let clock: FakeClock;
let control: ControlClient;

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  sim = await startSimulator({ sandboxes: FLEET, templates: 3, nodes: 2, clock });
  control = client(sim.apiUrl);
});
afterEach(() => {
  sim.faults.clear();
});
afterAll(async () => {
  await control.close();
  await sim.close();
});

function client(apiUrl: string, over: { apiPrefix?: string } = {}): ControlClient {
  return testControl({
    apiUrl,
    clock,
    dispatcher: new Agent(),
    ...over,
  });
}

type Shard = { index: number; total: number };

/**
 * A poller with the usage collector on (unless `poll: { usage: false }` is passed), over the simulator;
 * its batches are recorded, and every snapshot goes to `metrics` when given.
 */
function poller(
  over: Partial<TestPollerOptions> = {},
  o: { shard?: Shard; metrics?: ExporterMetrics } = {},
): { p: Poller; batches: string[][]; published: Snapshot[] } {
  const batches: string[][] = [];
  const published: Snapshot[] = [];
  const reader: PollerOptions["reader"] = Object.create(over.reader ?? control);
  const inner = over.reader ?? control;
  reader.sandboxUsage = (ids) => {
    batches.push([...ids]);
    return inner.sandboxUsage(ids);
  };
  const p = testPoller({
    clock,
    intervalMs: INTERVAL,
    shard: o.shard ?? { index: 0, total: 1 },
    runningStates: ["running", "active"],
    onSnapshot: (s) => {
      published.push(s);
      o.metrics?.update(s);
    },
    ...over,
    poll: { usage: true, usageIntervalMs: USAGE_EVERY, ...over.poll },
    reader,
  });
  return { p, batches, published };
}

const cycle = tickAndWait;

/** The ids the simulator has usage for: running and started, in `shard`. */
function sampledIds(shard: Shard = { index: 0, total: 1 }): string[] {
  return sim.state
    .sortedIds()
    .filter((id) => {
      const s = sim.state.sandbox(id);
      return (
        s?.state === "running" &&
        s.startedAt <= clock.now() &&
        inShard(id, shard.index, shard.total)
      );
    })
    .slice();
}

interface Sums {
  reported: number;
  cpus: number;
  memory: number;
  disk: number;
}

/** Usage per state x template label set, from the simulator's own usage model. */
function modelSums(shard: Shard): Map<string, Sums> {
  const out = new Map<string, Sums>();
  for (const id of sampledIds(shard)) {
    const s = sim.state.sandbox(id);
    if (!s) continue;
    const u = sandboxUsage(s);
    const key = `{state="${s.state}",template="${s.templateID}"${shard.total > 1 ? `,shard="${shard.index}"` : ""}}`;
    const sums = out.get(key) ?? { reported: 0, cpus: 0, memory: 0, disk: 0 };
    sums.reported++;
    sums.cpus += (u.cpuUsedPct / 100) * u.cpuCount;
    sums.memory += u.memUsed;
    sums.disk += u.diskUsed;
    out.set(key, sums);
  }
  return out;
}

function simSandbox(id: string) {
  const s = sim.state.sandbox(id);
  if (!s) throw new Error(`no sandbox ${id} in the simulator`);
  return s;
}

/** Sets the CPU use the simulator reports for `ids` (undefined: its default model). */
function setCpu(ids: readonly string[], pct: number | undefined): void {
  for (const id of ids) simSandbox(id).cpuPct = pct;
}

/** Samples of one family: label set -> value. */
function series(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of linesOf(text, name)) {
    const at = l.lastIndexOf(" ");
    out.set(l.slice(name.length, at), Number(l.slice(at + 1)));
  }
  return out;
}

describe("the usage collector", () => {
  it("is off unless asked: no GET /sandboxes/metrics, no usage part, no usage collector series", async () => {
    const defaults = ConfigSchema.parse({}).poll;
    expect(defaults).toMatchObject({ usage: false, usageIntervalMs: 60_000 });
    const { p, batches } = poller({ poll: { usage: false } });
    const before = sim.counters.get(USAGE);
    for (let i = 0; i < 3; i++) {
      const s = await cycle(p);
      expect(s.sandboxesComplete).toBe(true);
      expect(s.usage).toBeUndefined();
      clock.advance(USAGE_EVERY);
    }
    expect(sim.counters.get(USAGE)).toBe(before);
    expect(batches).toEqual([]);
    const text = collectorStatusFamilies("sandbox", p.latest as Snapshot)
      .map((f) => f.render("prometheus"))
      .join("");
    expect(text).not.toContain('collector="usage"');
  });

  it("reads this shard's running sandboxes in batches of at most 100 after a complete walk; the sums are the simulator's", async () => {
    const shard = { index: 0, total: 2 };
    const { metrics } = metricsWith({ shard });
    const { p, batches } = poller({}, { shard, metrics });
    const before = sim.counters.get(USAGE);
    const s = await cycle(p);

    const expected = sampledIds(shard);
    expect(expected.length).toBeGreaterThan(2 * USAGE_BATCH);
    expect(batches.length).toBe(Math.ceil(expected.length / USAGE_BATCH));
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(USAGE_BATCH);
    const asked = batches.flat();
    expect(new Set(asked).size).toBe(asked.length);
    expect([...asked].sort()).toEqual(expected);
    expect(sim.counters.get(USAGE) - before).toBe(batches.length);
    expect(s.collectors.usage).toMatchObject({
      name: "usage",
      success: true,
      stale: false,
      requests: batches.length,
    });
    expect(s.usage?.samples.size).toBe(expected.length);

    const text = await scrapeText(metrics);
    const model = modelSums(shard);
    const reported = series(text, "sandbox_sandboxes_usage_reported");
    for (const [key, n] of reported) expect(n, key).toBe(model.get(key)?.reported ?? 0);
    const cpus = series(text, "sandbox_sandboxes_cpu_used");
    const memory = series(text, "sandbox_sandboxes_memory_used_bytes");
    const disk = series(text, "sandbox_sandboxes_disk_used_bytes");
    expect([...cpus.keys()].sort()).toEqual([...model.keys()].sort());
    for (const [key, sums] of model) {
      expect(reported.get(key), key).toBe(sums.reported);
      expect(cpus.get(key), key).toBeCloseTo(sums.cpus, 9);
      expect(memory.get(key), key).toBe(sums.memory);
      expect(disk.get(key), key).toBe(sums.disk);
    }
    expect(linesOf(text, "sandbox_exporter_collect_success")).toContain(
      'sandbox_exporter_collect_success{collector="usage"} 1',
    );
  });

  it("leaves a sandbox the platform has no sample of out of the sums and its series: absent, never 0", async () => {
    const [t1, t2] = sim.state.templates.map((t) => t.templateID) as [string, string];
    sim.state.setSandboxCount(0);
    try {
      const later = clock.now() + 3_600_000;
      sim.state.addSandbox({ sandboxID: "sb-a", templateID: t1, cpuPct: 50 });
      sim.state.addSandbox({ sandboxID: "sb-b", templateID: t1, cpuPct: 25 });
      // Listed as running, but not started yet: the platform has no sample of them.
      sim.state.addSandbox({ sandboxID: "sb-unsampled", templateID: t1, startedAt: later });
      sim.state.addSandbox({ sandboxID: "sb-alone", templateID: t2, startedAt: later });
      const { metrics } = metricsWith({ perSandboxMetrics: true });
      const { p, batches } = poller({ compactSandboxes: false }, { metrics });
      const s = await cycle(p);
      expect(batches.flat().sort()).toEqual(["sb-a", "sb-alone", "sb-b", "sb-unsampled"]);
      expect([...(s.usage?.samples.keys() ?? [])].sort()).toEqual(["sb-a", "sb-b"]);

      const text = await scrapeText(metrics);
      const a = sandboxUsage(simSandbox("sb-a"));
      const b = sandboxUsage(simSandbox("sb-b"));
      expect(linesOf(text, "sandbox_sandboxes")).toContain(
        `sandbox_sandboxes{state="running",template="${t1}"} 3`,
      );
      expect(linesOf(text, "sandbox_sandboxes_usage_reported")).toEqual(
        expect.arrayContaining([
          `sandbox_sandboxes_usage_reported{state="running",template="${t1}"} 2`,
          `sandbox_sandboxes_usage_reported{state="running",template="${t2}"} 0`,
        ]),
      );
      expect(linesOf(text, "sandbox_sandboxes_memory_used_bytes")).toEqual([
        `sandbox_sandboxes_memory_used_bytes{state="running",template="${t1}"} ${a.memUsed + b.memUsed}`,
      ]);
      expect(
        series(text, "sandbox_sandboxes_cpu_used").get(`{state="running",template="${t1}"}`),
      ).toBeCloseTo(0.5 * a.cpuCount + 0.25 * b.cpuCount, 12);
      expect(linesOf(text, "sandbox_sandboxes_cpu_used").join()).not.toContain(t2);
      expect(linesOf(text, "sandbox_sandbox_info").join()).toContain("sb-unsampled");
      for (const family of [
        "sandbox_sandbox_cpu_used_ratio",
        "sandbox_sandbox_memory_used_bytes",
        "sandbox_sandbox_disk_used_bytes",
      ]) {
        expect(linesOf(text, family).map((l) => /sandbox_id="([^"]+)"/.exec(l)?.[1])).toEqual([
          "sb-a",
          "sb-b",
        ]);
      }
      expect(linesOf(text, "sandbox_sandbox_cpu_used_ratio")).toContain(
        'sandbox_sandbox_cpu_used_ratio{sandbox_id="sb-a"} 0.5',
      );
    } finally {
      sim.state.setSandboxCount(0);
      sim.state.setSandboxCount(FLEET);
    }
  });

  it("reads again only once its own interval has passed, one read per complete walk at most", async () => {
    const { p } = poller();
    const readAt: number[] = [];
    for (let t = 0; t <= 11; t++) {
      const n = sim.counters.get(USAGE);
      await cycle(p);
      if (sim.counters.get(USAGE) > n) readAt.push(t);
      clock.advance(INTERVAL);
    }
    expect(readAt).toEqual([0, 5, 10]);
  });

  it("runs after the walk without holding it back: a hung read lets later ticks walk and publish", async () => {
    // A read may run for a whole poll interval; one is due after every walk here.
    const intervalMs = 10 * INTERVAL;
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const hung: PollerOptions["reader"] = Object.create(control);
    hung.sandboxUsage = async (ids) => {
      await gate;
      return control.sandboxUsage(ids);
    };
    const { p, batches, published } = poller({
      reader: hung,
      intervalMs,
      runningStates: ["running"],
      poll: { usageIntervalMs: INTERVAL },
    });
    await p.tick();
    expect(published.at(-1)?.walked).toBe(true);
    expect(published.at(-1)?.refreshed.includes("usage")).toBe(false);
    const walks = sim.counters.get("GET /v2/sandboxes");
    clock.advance(2 * INTERVAL);
    const second = await p.tick();
    expect(second.walkBusy).toBe(false);
    expect(sim.counters.get("GET /v2/sandboxes")).toBeGreaterThan(walks);
    expect(published.at(-1)?.walked).toBe(true);
    // The read still hangs: the second walk started no other one.
    expect(batches.length).toBe(2);
    release();
    await p.walkDone();
    const last = published.at(-1) as Snapshot;
    expect(last.refreshed.includes("usage")).toBe(true);
    expect(last.collectors.usage).toMatchObject({ success: true, stale: false });
  });

  it("starts no batch once a poll interval has passed, and the sandboxes not read keep their samples", async () => {
    let slow = false;
    const reader: PollerOptions["reader"] = Object.create(control);
    reader.sandboxUsage = (ids) => {
      // A batch that takes a whole poll interval.
      if (slow) clock.advance(INTERVAL);
      return control.sandboxUsage(ids);
    };
    const { p, batches } = poller({ reader });
    const ids = sampledIds();
    try {
      const first = await cycle(p);
      const before = first.usage?.samples as ReadonlyMap<string, SandboxUsage>;
      expect(before.size).toBe(ids.length);
      const [asked, notAsked] = [batches[0] as string[], (batches[1] as string[])[0] as string];
      setCpu(ids, 10);
      slow = true;
      clock.advance(USAGE_EVERY);
      const n = sim.counters.get(USAGE);
      const s = await cycle(p);
      expect(sim.counters.get(USAGE) - n).toBe(1);
      expect(s.collectors.usage).toMatchObject({ success: false, stale: true, requests: 1 });
      expect(s.collectors.usage.error?.code).toBe("ERR_USAGE_DEADLINE");
      expect(s.usage?.samples.size).toBe(ids.length);
      for (const id of asked) expect(s.usage?.samples.get(id)?.cpuPct).toBe(10);
      expect(s.usage?.samples.get(notAsked)).toBe(before.get(notAsked));
    } finally {
      setCpu(ids, undefined);
    }
  });

  it("keeps the last samples of a failed batch, marks the collector stale, and updates the other batches", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    // The batch holding `victim` answers a body of the wrong shape while `spoil` is on.
    let spoil = false;
    let victim = "";
    const flaky: PollerOptions["reader"] = Object.create(control);
    flaky.sandboxUsage = (batch) =>
      spoil && batch.includes(victim)
        ? Promise.reject(new PlatformBodyError("/sandboxes/metrics", "GET", "not a usage map"))
        : control.sandboxUsage(batch);
    const { p, batches } = poller({ compactSandboxes: false, reader: flaky }, { metrics });
    const ids = sampledIds();
    try {
      await cycle(p);
      const first = batches.splice(0);
      expect(first.length).toBeGreaterThan(2);
      const ratio = async (id: string) =>
        series(await scrapeText(metrics), "sandbox_sandbox_cpu_used_ratio").get(
          `{sandbox_id="${id}"}`,
        );
      const mate = (first[1] as string[])[1] as string;
      victim = (first[1] as string[])[0] as string;
      const other = (first[0] as string[])[0] as string;
      const was = { mate: await ratio(mate), victim: await ratio(victim) };
      expect(was.mate).toBeDefined();
      expect(was.mate).not.toBe(0.1);
      // Every sandbox now uses 10 %, but one batch is a bad body.
      setCpu(ids, 10);
      spoil = true;
      clock.advance(USAGE_EVERY);
      const s = await cycle(p);
      expect(s.collectors.usage).toMatchObject({ success: false, stale: true });
      expect(s.collectors.usage.error?.code).toBe("ERR_PLATFORM_BAD_BODY");
      expect(s.collectors.usage.unsupported).toBeUndefined();
      expect(await ratio(mate)).toBe(was.mate);
      expect(await ratio(victim)).toBe(was.victim);
      expect(await ratio(other)).toBe(0.1);
      const text = await scrapeText(metrics);
      expect(linesOf(text, "sandbox_exporter_collect_stale")).toContain(
        'sandbox_exporter_collect_stale{collector="usage"} 1',
      );
      expect(linesOf(text, "sandbox_exporter_collect_success")).toContain(
        'sandbox_exporter_collect_success{collector="usage"} 0',
      );
      expect(s.usage?.samples.size).toBe(ids.length);

      // Every batch failing: every sample stays.
      sim.faults.route(USAGE, { status: 503 });
      setCpu(ids, 20);
      clock.advance(USAGE_EVERY);
      const down = await cycle(p);
      expect(down.collectors.usage).toMatchObject({ success: false, stale: true });
      expect(down.usage?.samples.size).toBe(ids.length);
      expect(await ratio(other)).toBe(0.1);
      expect(await ratio(mate)).toBe(was.mate);

      // A negative share is one bad value, not a bad batch: that sample alone is left out, counted.
      sim.faults.clear();
      spoil = false;
      setCpu([victim], -1);
      const counted = (): number =>
        control.invalid.entries().reduce((n, c) => n + (c.resource === "usage" ? c.count : 0), 0);
      const before = counted();
      clock.advance(USAGE_EVERY);
      const back = await cycle(p);
      expect(back.collectors.usage).toMatchObject({ success: true, stale: false });
      expect(await ratio(mate)).toBe(0.2);
      expect(await ratio(victim)).toBeUndefined();
      expect(counted() - before).toBe(1);
    } finally {
      setCpu(ids, undefined);
    }
  });

  it("goes stale when no walk lets it read for two of its intervals", async () => {
    const { p } = poller();
    expect((await cycle(p)).collectors.usage).toMatchObject({ success: true, stale: false });
    sim.faults.route("GET /v2/sandboxes", { status: 500 });
    clock.advance(USAGE_EVERY);
    expect((await cycle(p)).collectors.usage).toMatchObject({ success: true, stale: false });
    clock.advance(USAGE_EVERY + 1);
    expect((await cycle(p)).collectors.usage).toMatchObject({ success: true, stale: true });
  });
});

describe("capability detection of the usage endpoint", () => {
  it("calls a 404 unsupported, stops asking until the re-check, and takes it back when it answers", async () => {
    const changes: Array<[string, boolean]> = [];
    const { p } = poller({ onSupport: (c, supported) => changes.push([c, supported]) });
    sim.faults.route(USAGE, { status: 404 });
    const n = sim.counters.get(USAGE);
    const s = await cycle(p);
    // The answer is about the endpoint: the batches not yet started are not asked.
    const asked = sim.counters.get(USAGE) - n;
    expect(asked).toBeGreaterThan(0);
    expect(asked).toBeLessThan(Math.ceil(sampledIds().length / USAGE_BATCH));
    expect(s.collectors.usage).toMatchObject({ unsupported: true, success: false, stale: false });
    expect(changes).toEqual([["usage", false]]);
    const text = collectorStatusFamilies("sandbox", s)
      .map((f) => f.render("prometheus"))
      .join("");
    expect(text).toContain('sandbox_exporter_collector_supported{collector="usage"} 0\n');
    expect(text).not.toMatch(/collect_(success|stale)\{collector="usage"\}/);

    for (let i = 0; i < 9; i++) {
      clock.advance(INTERVAL);
      expect((await cycle(p)).collectors.usage.unsupported).toBe(true);
    }
    expect(sim.counters.get(USAGE) - n).toBe(asked);
    sim.faults.clear();
    clock.advance(INTERVAL);
    const back = await cycle(p);
    expect(back.collectors.usage).toMatchObject({ success: true, stale: false });
    expect(back.collectors.usage.unsupported).toBeUndefined();
    expect(changes).toEqual([
      ["usage", false],
      ["usage", true],
    ]);
  });

  it("treats a 404 after a success as a failure, not as unsupported", async () => {
    const { p } = poller();
    await cycle(p);
    sim.faults.route(USAGE, { status: 404 });
    clock.advance(USAGE_EVERY);
    const s = await cycle(p);
    expect(s.collectors.usage).toMatchObject({ success: false, stale: true });
    expect(s.collectors.usage.unsupported).toBeUndefined();
  });
});

describe("the usage request", () => {
  it("is GET /sandboxes/metrics with one sandbox_ids comma list of at most 100 running ids", async () => {
    const running = Array.from({ length: 230 }, (_, i) => `r-${String(i).padStart(3, "0")}`);
    const paused = ["p-1", "p-2"];
    const asked: URL[] = [];
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "", "http://x");
      const json = (body: unknown) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (url.pathname === "/v2/sandboxes") {
        json([
          ...running.map((id) => ({ sandboxID: id, templateID: "t", state: "running" })),
          ...paused.map((id) => ({ sandboxID: id, templateID: "t", state: "paused" })),
        ]);
        return;
      }
      if (url.pathname === "/sandboxes/metrics" && req.method === "GET") {
        asked.push(url);
        const ids = (url.searchParams.get("sandbox_ids") ?? "").split(",");
        const sandboxes: Record<string, unknown> = {};
        // r-000 has no sample: the platform leaves it out.
        for (const id of ids.filter((x) => x !== "r-000"))
          sandboxes[id] = {
            timestampUnix: 1_790_000_000,
            cpuCount: 2,
            cpuUsedPct: 12.5,
            memUsed: 1_000,
            memTotal: 4_000,
            memCache: 0,
            diskUsed: 2_000,
            diskTotal: 9_000,
          };
        json({ sandboxes });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    const c = client(`http://127.0.0.1:${port}`, { apiPrefix: "" });
    try {
      const { p } = poller({ reader: c, clusterWide: false });
      const s = await cycle(p);
      expect(asked).toHaveLength(3);
      const lists = asked.map((u) => {
        expect(u.pathname).toBe("/sandboxes/metrics");
        expect([...u.searchParams.keys()]).toEqual(["sandbox_ids"]);
        return (u.searchParams.get("sandbox_ids") ?? "").split(",");
      });
      for (const ids of lists) {
        expect(ids.length).toBeLessThanOrEqual(100);
        expect(new Set(ids).size).toBe(ids.length);
      }
      expect(lists.flat().sort()).toEqual(running);
      expect(s.collectors.usage).toMatchObject({ success: true, requests: 3 });
      expect(s.usage?.samples.size).toBe(229);
      expect(s.usage?.samples.has("r-000")).toBe(false);
      expect(s.usage?.samples.get("r-001")).toMatchObject({
        cpuPct: 12.5,
        cpuCount: 2,
        memUsedBytes: 1_000,
        diskUsedBytes: 2_000,
      });
    } finally {
      await c.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe("usage batches", () => {
  it("bounds a batch by URL length as well as by count, and leaves out an id that cannot fit alone", () => {
    const long = "l".repeat(2_500);
    const huge = "h".repeat(100_000);
    const ids = [
      "a",
      long,
      long,
      long,
      huge,
      "b",
      ...Array.from({ length: 150 }, (_, i) => `s${i}`),
    ];
    const { batches, tooLong } = usageBatches(ids, 100, 6_000);
    expect(tooLong).toBe(1);
    expect(batches.flat()).toEqual(ids.filter((id) => id !== huge));
    for (const b of batches) {
      expect(b.length).toBeLessThanOrEqual(100);
      // What the query carries: each id URL-encoded, joined by "%2C".
      expect(b.map((id) => encodeURIComponent(id)).join("%2C").length).toBeLessThanOrEqual(6_000);
    }
    // Two 2,500-byte ids fit in 6,000 bytes, a third does not.
    expect(batches[0]).toEqual(["a", long, long]);
    // Ids needing escapes count at their encoded size ("é" is "%C3%A9", 6 bytes).
    expect(usageBatches(["é".repeat(1_000)], 100, 6_000).tooLong).toBe(0);
    expect(usageBatches(["é".repeat(1_001)], 100, 6_000).tooLong).toBe(1);
  });
});
