// The storage collector (poll.storage) against a hostile storage API written apart from the
// simulator, over loopback: off by default; snapshots paged 100 at a time and volumes counted and
// exported; snapshots first seen counted once each (none at the first read), as a counter in both
// formats; a bad record dropped and counted without losing its page; a list the platform does not
// serve left out and asked again after the re-check, and neither served making it unsupported.
// Then the E2B-mode simulator serving both lists as E2B does.
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PollSettings } from "../../src/collect/collector.js";
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import { storageCollector } from "../../src/collect/storage/storage.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { OpenApiContract } from "../contract/openapi.js";
import { testControl } from "../helpers/control.js";
import { advanceAndTick } from "../helpers/cycle.js";
import { type JsonAnswer, startJsonApi } from "../helpers/json-api.js";
import { testPoller, tickAndWait } from "../helpers/poller.js";
import { linesOf, metricsWith, openMetricsProblems, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 1_000;
const RECHECK_MS = 10 * INTERVAL;

/** The hostile platform: its records (raw, bad ones too), what each route answers, what it got. */
interface Platform {
  snapshots: unknown[];
  volumes: unknown[];
  /** 200: the list; else this status. "notAList": a 200 whose body is an object. */
  snapshotsAnswer: 200 | 404 | 405 | 500 | "notAList";
  volumesAnswer: 200 | 404 | 405;
  counts: Map<string, number>;
  limits: string[];
  /** "loop": the third page sends back the first page's token. */
  paging: "normal" | "loop";
  /** Each /snapshots page moves the clock this much (a slow list, on the injected clock). */
  pageMs: number;
  /** The nextToken of every /snapshots request ("-" for none). */
  tokens: string[];
}

let up: Platform;
let clock: FakeClock;
let control: ControlClient;
let close: () => Promise<void>;

function route(url: URL): JsonAnswer {
  const key = `GET ${url.pathname}`;
  up.counts.set(key, (up.counts.get(key) ?? 0) + 1);
  if (url.pathname === "/volumes") {
    if (up.volumesAnswer !== 200) return [up.volumesAnswer, { code: up.volumesAnswer }];
    return [200, up.volumes];
  }
  if (url.pathname !== "/snapshots") return [404, { code: 404, message: "no route" }];
  up.limits.push(url.searchParams.get("limit") ?? "");
  up.tokens.push(url.searchParams.get("nextToken") ?? "-");
  clock.advance(up.pageMs);
  if (up.snapshotsAnswer === "notAList") return [200, { snapshots: "soon" }];
  if (up.snapshotsAnswer !== 200) return [up.snapshotsAnswer, { code: up.snapshotsAnswer }];
  const limit = Math.min(100, Number(url.searchParams.get("limit") ?? 100));
  const from = Number(url.searchParams.get("nextToken") ?? 0);
  const page = up.snapshots.slice(from, from + limit);
  const more = from + page.length < up.snapshots.length;
  const token = up.paging === "loop" && from >= 200 ? "100" : String(from + page.length);
  return [200, page, more ? { "X-Next-Token": token } : {}];
}

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  ({ control, close } = await startJsonApi(route, clock));
});
beforeEach(() => {
  up = {
    snapshots: snaps(0, 5),
    volumes: [{ volumeID: "v-1", name: "data" }],
    snapshotsAnswer: 200,
    volumesAnswer: 200,
    counts: new Map(),
    limits: [],
    paging: "normal",
    pageMs: 0,
    tokens: [],
  };
});
afterAll(() => close());

/** Snapshot records `from` .. `from + n - 1`, newest first as E2B lists them. */
function snaps(from: number, n: number): unknown[] {
  return Array.from({ length: n }, (_, k) => ({
    snapshotID: `snap-${String(from + n - 1 - k).padStart(5, "0")}:default`,
    names: [],
  }));
}

function poller(poll: Partial<PollSettings> = { storage: true }): Poller {
  return testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    collectors: [storageCollector],
    // The detail reads have their own tests (snapshot-details.test.ts): none here.
    poll: { capabilityRecheckMs: RECHECK_MS, storageDetailsPerTick: 0, ...poll },
  });
}

const cycle = (p: Poller): Promise<Snapshot> => advanceAndTick(p, clock, INTERVAL);

async function scrape(s: Snapshot, format: "prometheus" | "openmetrics" = "prometheus") {
  const { metrics } = metricsWith();
  metrics.update(s);
  return scrapeText(metrics, format);
}

describe("storage collector", () => {
  it("is off by default: no storage request, and its status says skipped", async () => {
    const s = await cycle(poller({}));
    expect([up.counts.get("GET /snapshots"), up.counts.get("GET /volumes")]).toEqual([
      undefined,
      undefined,
    ]);
    expect(s.collectors.storage).toMatchObject({ skipped: true });
    expect(s.storage).toBeUndefined();
  });

  it("counts 1,050 snapshots on 11 pages of 100 and the volumes, and exports them", async () => {
    up.snapshots = snaps(0, 1_050);
    up.volumes = [
      { volumeID: "v-1", name: "a" },
      { volumeID: "v-2", name: "b" },
      { volumeID: "v-3", name: "c" },
    ];
    const s = await cycle(poller());
    expect(s.collectors.storage).toMatchObject({ success: true, requests: 12 });
    expect(up.counts.get("GET /snapshots")).toBe(11);
    expect(new Set(up.limits)).toEqual(new Set(["100"]));
    const text = await scrape(s);
    expect(linesOf(text, "sandbox_storage_snapshots")).toEqual(["sandbox_storage_snapshots 1050"]);
    expect(linesOf(text, "sandbox_storage_volumes")).toEqual(["sandbox_storage_volumes 3"]);
  });

  it("counts each snapshot first seen once, none of the first read, as a counter in both formats", async () => {
    const p = poller();
    const first = await cycle(p);
    expect(first.storage?.firstSeen).toBe(0);
    // Three taken since, one deleted.
    up.snapshots = [...snaps(5, 3), ...snaps(0, 5).slice(1)];
    const second = await cycle(p);
    expect(second.storage?.firstSeen).toBe(3);
    const third = await cycle(p);
    expect(third.storage?.firstSeen).toBe(3);
    const text = await scrape(third);
    expect(linesOf(text, "sandbox_storage_snapshots_first_seen_total")).toEqual([
      "sandbox_storage_snapshots_first_seen_total 3",
    ]);
    expect(text).toContain("# TYPE sandbox_storage_snapshots_first_seen_total counter");
    const om = await scrape(third, "openmetrics");
    expect(om).toContain("# TYPE sandbox_storage_snapshots_first_seen counter");
    expect(linesOf(om, "sandbox_storage_snapshots_first_seen_total")).toEqual([
      "sandbox_storage_snapshots_first_seen_total 3",
    ]);
    expect(openMetricsProblems(om)).toEqual([]);
  });

  it("drops a bad record and counts it, keeping the rest of its page", async () => {
    const before = {
      record: control.invalid.get("snapshot", "record"),
      id: control.invalid.get("snapshot", "id"),
      volume: control.invalid.get("volume", "id"),
      names: control.invalid.get("snapshot", "names"),
    };
    const badNames = { snapshotID: "snap-names:default", names: "nightly" };
    up.snapshots = [...snaps(0, 3), 42, {}, { snapshotID: "  " }, badNames, ...snaps(3, 2)];
    up.volumes = [{ volumeID: "v-1", name: "a" }, { name: "no id" }];
    const s = await cycle(poller());
    expect(s.collectors.storage).toMatchObject({ success: true });
    // A names field that is no list loses the names, counted, and keeps the snapshot.
    expect(s.storage?.snapshots?.count).toBe(6);
    expect(s.storage?.facts?.get("snap-names:default")?.names).toEqual([]);
    expect(control.invalid.get("snapshot", "names") - before.names).toBe(1);
    expect(s.storage?.volumes?.count).toBe(1);
    expect(control.invalid.get("snapshot", "record") - before.record).toBe(1);
    expect(control.invalid.get("snapshot", "id") - before.id).toBe(2);
    expect(control.invalid.get("volume", "id") - before.volume).toBe(1);
  });

  it("fails, named, on a list body that is no list, and keeps the last good data", async () => {
    const p = poller();
    await cycle(p);
    up.snapshotsAnswer = "notAList";
    const s = await cycle(p);
    expect(s.collectors.storage).toMatchObject({ success: false, stale: true });
    expect(s.collectors.storage.error).toMatchObject({ code: "ERR_PLATFORM_BAD_BODY" });
    expect(s.storage?.snapshots?.count).toBe(5);
  });

  it("leaves out a list the platform does not serve and asks it again only after the re-check", async () => {
    up.volumesAnswer = 404;
    const p = poller();
    const first = await cycle(p);
    expect(first.collectors.storage).toMatchObject({ success: true, requests: 2 });
    expect(first.storage?.volumes).toBeUndefined();
    const text = await scrape(first);
    expect(linesOf(text, "sandbox_storage_volumes")).toEqual([]);
    expect(linesOf(text, "sandbox_storage_snapshots")).toEqual(["sandbox_storage_snapshots 5"]);
    for (let i = 0; i < 5; i++) await cycle(p);
    expect(up.counts.get("GET /volumes")).toBe(1);
    up.volumesAnswer = 200;
    clock.advance(RECHECK_MS);
    const back = await cycle(p);
    expect(up.counts.get("GET /volumes")).toBe(2);
    expect(back.storage?.volumes?.count).toBe(1);
  });

  it.each([404, 405] as const)(
    "is unsupported where neither list is served (%s), and re-checked slowly",
    async (status) => {
      up.snapshotsAnswer = status;
      up.volumesAnswer = status;
      const p = poller();
      const s = await cycle(p);
      expect(s.collectors.storage).toMatchObject({ unsupported: true, success: false });
      const asked = up.counts.get("GET /snapshots");
      for (let i = 0; i < 5; i++) await cycle(p);
      expect(up.counts.get("GET /snapshots")).toBe(asked);
    },
  );

  it("never calls a 5xx unsupported", async () => {
    up.snapshotsAnswer = 500;
    const s = await cycle(poller());
    expect(s.collectors.storage).toMatchObject({ success: false });
    expect(s.collectors.storage.unsupported).toBeUndefined();
  });
});

describe("storage collector, a long or broken list", () => {
  it("reads a long list over several ticks: so far, then the whole count, first seen once a pass ends", async () => {
    up.snapshots = snaps(0, 1_050);
    const p = poller({ storage: true, listPagesPerTick: 4 });
    const first = await cycle(p);
    expect(first.storage?.snapshots).toEqual({ count: 400, complete: false });
    expect(first.collectors.storage.lists).toEqual([
      expect.objectContaining({
        list: "/snapshots",
        pages: 4,
        truncated: expect.objectContaining({ code: "ERR_PAGING_PAGE_LIMIT", resumes: true }),
      }),
      { list: "/volumes", pages: 1 },
    ]);
    expect((await cycle(p)).storage?.snapshots).toEqual({ count: 800, complete: false });
    const whole = await cycle(p);
    expect(whole.storage?.snapshots).toEqual({ count: 1_050, complete: true });
    // Each page once, each tick on from the token the last one stopped at.
    expect(up.tokens).toEqual([
      "-",
      ...Array.from({ length: 10 }, (_, i) => String((i + 1) * 100)),
    ]);
    // The next pass: the last complete count is published until it ends; then the new ones count.
    up.snapshots = [...snaps(1_050, 2), ...snaps(0, 1_050)];
    const during = await cycle(p);
    expect(during.storage?.snapshots).toEqual({ count: 1_050, complete: true });
    expect(during.storage?.firstSeen).toBe(0);
    await cycle(p);
    const ended = await cycle(p);
    expect(ended.storage?.snapshots).toEqual({ count: 1_052, complete: true });
    expect(ended.storage?.firstSeen).toBe(2);
  });

  it("stops at its time limit per tick on the injected clock, and goes on next tick", async () => {
    up.snapshots = snaps(0, 1_050);
    up.pageMs = 100;
    const p = poller({ storage: true, listMaxMs: 450 });
    const s = await cycle(p);
    // Pages at +100 .. +500 ms: none is asked for once 450 ms have passed.
    expect(up.counts.get("GET /snapshots")).toBe(5);
    expect(s.storage?.snapshots).toEqual({ count: 500, complete: false });
    expect(s.collectors.storage.lists?.[0]?.truncated?.code).toBe("ERR_PAGING_TIME_LIMIT");
    await cycle(p);
    await cycle(p);
    expect(up.counts.get("GET /snapshots")).toBe(11);
  });

  it("publishes the volumes when the snapshots loop, failing named, the snapshots read kept", async () => {
    up.snapshots = snaps(0, 1_050);
    up.paging = "loop";
    const s = await cycle(poller());
    expect(up.counts.get("GET /snapshots")).toBe(3);
    expect(s.collectors.storage).toMatchObject({
      success: false,
      error: { code: "ERR_PAGING_REPEATED_TOKEN" },
    });
    // Pages 1 and 2; the third, which repeats page 1's token, is left out.
    expect(s.storage?.snapshots).toEqual({ count: 200, complete: false });
    expect(s.storage?.volumes).toEqual({ count: 1, complete: true });
    const text = await scrape(s);
    expect(linesOf(text, "sandbox_storage_volumes")).toEqual(["sandbox_storage_volumes 1"]);
  });

  it("publishes the volumes when the snapshots fail, the last snapshot count kept", async () => {
    const p = poller();
    await cycle(p);
    up.snapshotsAnswer = 500;
    up.volumes = [...up.volumes, { volumeID: "v-2", name: "more" }];
    const s = await cycle(p);
    expect(s.collectors.storage).toMatchObject({
      success: false,
      error: { code: "ERR_PLATFORM_HTTP" },
    });
    expect(s.storage?.snapshots?.count).toBe(5);
    expect(s.storage?.volumes?.count).toBe(2);
  });
});

describe("the simulator's storage lists", () => {
  const DOC = fileURLToPath(new URL("../fixtures/e2b/openapi.yml", import.meta.url));
  const contract = OpenApiContract.load(DOC);
  const valid = (template: string) =>
    contract.responseValidator(contract.response(contract.operation(template, "GET")!, 200)!)!;

  it("serves E2B's /snapshots (the snapshots taken, paged) and /volumes", async () => {
    const simClock = new FakeClock(1_790_000_000_000);
    const sim = await startSimulator({
      flavor: "e2b",
      sandboxes: 150,
      templates: 2,
      nodes: 1,
      clock: simClock,
    });
    const client = testControl({ apiUrl: sim.apiUrl, apiPrefix: "", flavor: "e2b" });
    try {
      const running = [...sim.state.sandboxes.values()].filter((s) => s.state === "running");
      for (const s of running.slice(0, 120)) {
        simClock.advance(1_000);
        sim.state.snapshots.take(s, {});
      }
      const taken = [...sim.state.snapshots.all()].length;
      const first = await client.getJsonReply("/snapshots", "/snapshots", { limit: 100 });
      expect(valid("/snapshots")(first.body)).toBe(true);
      expect(first.body).toHaveLength(100);
      expect(first.headers["x-next-token"]).toBeTruthy();
      const volumes = await client.getJson("/volumes", "/volumes");
      expect(valid("/volumes")(volumes)).toBe(true);
      const p = testPoller({
        reader: client,
        clock,
        intervalMs: INTERVAL,
        collectors: [storageCollector],
        poll: { storage: true },
      });
      const s = await tickAndWait(p);
      expect(s.storage?.snapshots?.count).toBe(taken);
      expect(s.storage?.volumes?.count).toBe(2);
      expect(sim.counters.get("GET /snapshots")).toBe(1 + Math.ceil(taken / 100));
    } finally {
      await client.close();
      await sim.close();
    }
  });
});
