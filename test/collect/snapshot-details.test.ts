// The storage collector's snapshot details against a hostile API on loopback (not the simulator):
// GET /templates/{raw id} read for at most poll.storageDetailsPerTick snapshots a tick, newest
// unknown first, remembered across ticks and asked again after an hour; a named snapshot's 404
// leaves its age counting from first seen; a bad body is counted and asked again later; the
// families (by age, never used, age unknown, by name with its cap) and the opt-in per-snapshot
// series with their cap.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PollSettings } from "../../src/collect/collector.js";
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import { storageCollector } from "../../src/collect/storage/storage.js";
import { FakeClock } from "../../src/util/clock.js";
import { advanceAndTick } from "../helpers/cycle.js";
import { type JsonAnswer, startJsonApi } from "../helpers/json-api.js";
import { testPoller } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 1_000;
const DAY = 86_400_000;
const T0 = 1_790_000_000_000;

interface Snap {
  id: string;
  names: string[];
  /** Days before T0 it was made; "bad": the detail body's createdAt does not parse. */
  madeDaysAgo: number | "bad";
  lastSpawnedDaysAgo?: number;
}

let clock: FakeClock;
let snaps: Snap[];
let detailPaths: string[];
/** Each /snapshots page moves the clock this much (a slow list, on the injected clock). */
let pageMs: number;
let control: Awaited<ReturnType<typeof startJsonApi>>["control"];
let close: () => Promise<void>;

function route(url: URL): JsonAnswer {
  if (url.pathname === "/volumes") return [200, []];
  if (url.pathname === "/snapshots") {
    clock.advance(pageMs);
    const limit = Math.min(100, Number(url.searchParams.get("limit") ?? 100));
    const from = Number(url.searchParams.get("nextToken") ?? 0);
    const page = snaps.slice(from, from + limit).map((s) => ({ snapshotID: s.id, names: s.names }));
    const more = from + limit < snaps.length;
    return [200, page, more ? { "X-Next-Token": String(from + limit) } : {}];
  }
  const m = /^\/templates\/([^/]+)$/.exec(url.pathname);
  if (!m) return [404, { code: 404, message: "no route" }];
  detailPaths.push(url.pathname);
  // E2B looks the raw id up: a name or a tagged id is not found.
  const s = snaps.find((x) => x.id === `${m[1]}:default`);
  if (!s) return [404, { code: 404, message: `Template ${m[1]} not found` }];
  const at = (days: number) => new Date(T0 - days * DAY).toISOString();
  return [
    200,
    {
      templateID: m[1],
      createdAt: s.madeDaysAgo === "bad" ? "yesterday" : at(s.madeDaysAgo),
      lastSpawnedAt: s.lastSpawnedDaysAgo === undefined ? null : at(s.lastSpawnedDaysAgo),
      spawnCount: s.lastSpawnedDaysAgo === undefined ? 0 : 3,
      builds: [],
    },
  ];
}

beforeAll(async () => {
  clock = new FakeClock(T0);
  ({ control, close } = await startJsonApi(route, clock));
});
beforeEach(() => {
  clock.set(T0);
  detailPaths = [];
  pageMs = 0;
  // Newest first, as E2B lists them.
  snaps = [
    { id: "team/nightly:default", names: ["team/nightly"], madeDaysAgo: 1 },
    { id: "s5:default", names: [], madeDaysAgo: 0.5 },
    { id: "s4:default", names: [], madeDaysAgo: 3, lastSpawnedDaysAgo: 1 },
    { id: "s3:default", names: [], madeDaysAgo: "bad" },
    { id: "s2:default", names: [], madeDaysAgo: 10 },
    { id: "s1:default", names: [], madeDaysAgo: 40, lastSpawnedDaysAgo: 35 },
  ];
});
afterAll(() => close());

function poller(poll: Partial<PollSettings>): Poller {
  return testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    collectors: [storageCollector],
    poll: { storage: true, ...poll },
  });
}

const cycle = (p: Poller): Promise<Snapshot> => advanceAndTick(p, clock, INTERVAL);

async function scrape(s: Snapshot): Promise<string> {
  const { metrics } = metricsWith();
  metrics.update(s);
  return scrapeText(metrics);
}

describe("snapshot details", () => {
  it("reads at most the per-tick number, newest unknown first, and remembers them", async () => {
    const p = poller({ storageDetailsPerTick: 2 });
    await cycle(p);
    // The named one goes by its name (URL-encoded), which E2B does not serve: a 404.
    expect(detailPaths).toEqual(["/templates/team%2Fnightly", "/templates/s5"]);
    await cycle(p);
    await cycle(p);
    expect(detailPaths.slice(2)).toEqual([
      "/templates/s4",
      "/templates/s3",
      "/templates/s2",
      "/templates/s1",
    ]);
    // All asked: nothing more until an hour has passed, then the oldest asked first.
    await cycle(p);
    expect(detailPaths).toHaveLength(6);
    clock.advance(3_600_000);
    await cycle(p);
    expect(detailPaths.slice(6)).toEqual(["/templates/team%2Fnightly", "/templates/s5"]);
  });

  it("ages each snapshot from its created time, or from first seen, and counts what it read", async () => {
    const p = poller({ storageDetailsPerTick: 10 });
    const s = await cycle(p);
    const facts = s.storage?.facts;
    expect(facts?.get("s1:default")).toMatchObject({ createdAt: T0 - 40 * DAY, spawnCount: 3 });
    expect(facts?.get("team/nightly:default")).toMatchObject({ noDetail: true });
    expect(facts?.get("team/nightly:default")?.createdAt).toBeUndefined();
    expect(facts?.get("s3:default")?.createdAt).toBeUndefined();
    const text = await scrape(s);
    // s5 (12 h) and the two without a created time (first seen now) are under a day; s4 3 days;
    // s2 10 days; s1 40 days.
    expect(linesOf(text, "sandbox_storage_snapshots_by_age")).toEqual([
      'sandbox_storage_snapshots_by_age{age="lt_1d"} 3',
      'sandbox_storage_snapshots_by_age{age="1d_to_7d"} 1',
      'sandbox_storage_snapshots_by_age{age="7d_to_30d"} 1',
      'sandbox_storage_snapshots_by_age{age="ge_30d"} 1',
    ]);
    expect(linesOf(text, "sandbox_storage_snapshots_never_used")).toEqual([
      "sandbox_storage_snapshots_never_used 2",
    ]);
    expect(linesOf(text, "sandbox_storage_snapshots_age_unknown")).toEqual([
      "sandbox_storage_snapshots_age_unknown 2",
    ]);
    expect(linesOf(text, "sandbox_storage_snapshot_oldest_age_seconds")).toEqual([
      `sandbox_storage_snapshot_oldest_age_seconds ${(40 * DAY + INTERVAL) / 1000}`,
    ]);
    expect(linesOf(text, "sandbox_storage_snapshot_detail_reads_total")).toEqual([
      'sandbox_storage_snapshot_detail_reads_total{result="ok"} 4',
      'sandbox_storage_snapshot_detail_reads_total{result="not_found"} 1',
      'sandbox_storage_snapshot_detail_reads_total{result="failed"} 1',
    ]);
    // The snapshots without a created time age from first seen: two days on, both are 1d_to_7d
    // (with s5, now 2.5 days old, and s4, 5 days).
    clock.advance(2 * DAY);
    const later = await scrape(await cycle(p));
    expect(linesOf(later, "sandbox_storage_snapshots_by_age")[1]).toBe(
      'sandbox_storage_snapshots_by_age{age="1d_to_7d"} 4',
    );
  });

  it("reads details while a long list takes the whole tick (beside the list, not after it)", async () => {
    snaps = Array.from({ length: 300 }, (_, i) => ({
      id: `s${String(299 - i).padStart(3, "0")}:default`,
      names: [],
      madeDaysAgo: 1,
    }));
    // listMaxMs 300: three pages of 100 in the first tick (the pass ends), then each page takes
    // 200 ms of the tick's 300, so the list alone would spend every tick.
    const p = poller({ storageDetailsPerTick: 5, listMaxMs: 300 });
    await cycle(p);
    const first = detailPaths.length;
    pageMs = 200;
    await cycle(p);
    await cycle(p);
    expect(first).toBe(5);
    expect(detailPaths).toHaveLength(15);
  });

  it("drops the facts of a snapshot that left the list, and keeps the others' details", async () => {
    const p = poller({ storageDetailsPerTick: 10 });
    await cycle(p);
    snaps = snaps.filter((x) => x.id !== "s2:default");
    const s = await cycle(p);
    expect([...(s.storage?.facts?.keys() ?? [])]).not.toContain("s2:default");
    expect(s.storage?.facts?.get("s1:default")?.createdAt).toBe(T0 - 40 * DAY);
    expect(detailPaths).toHaveLength(6);
  });

  it("counts snapshots by name without the tag, the names past the cap as _other", async () => {
    snaps = [
      { id: "t/a:v2", names: ["t/a:v2", "t/a"], madeDaysAgo: 1 },
      { id: "t/b:default", names: ["t/b"], madeDaysAgo: 1 },
      { id: "t/c:default", names: ["t/c"], madeDaysAgo: 1 },
      { id: "t/a:v1", names: ["t/a:v1"], madeDaysAgo: 2 },
    ];
    const text = await scrape(await cycle(poller({ storageMaxNames: 2 })));
    expect(linesOf(text, "sandbox_storage_snapshots_by_name")).toEqual([
      'sandbox_storage_snapshots_by_name{name="t/a"} 2',
      'sandbox_storage_snapshots_by_name{name="t/b"} 1',
      'sandbox_storage_snapshots_by_name{name="_other"} 1',
    ]);
  });

  it("exports per-snapshot series only when opted in, the newest up to the cap", async () => {
    const off = await scrape(await cycle(poller({ storageDetailsPerTick: 10 })));
    expect(linesOf(off, "sandbox_snapshot_info")).toEqual([]);
    const on = await scrape(
      await cycle(
        poller({
          storageDetailsPerTick: 10,
          storagePerSnapshotMetrics: true,
          storageMaxSnapshotSeries: 3,
        }),
      ),
    );
    expect(linesOf(on, "sandbox_snapshot_info")).toEqual([
      'sandbox_snapshot_info{snapshot_id="team/nightly:default",name="team/nightly"} 1',
      'sandbox_snapshot_info{snapshot_id="s5:default",name=""} 1',
      'sandbox_snapshot_info{snapshot_id="s4:default",name=""} 1',
    ]);
    expect(linesOf(on, "sandbox_snapshot_last_spawned_timestamp_seconds")).toEqual([
      `sandbox_snapshot_last_spawned_timestamp_seconds{snapshot_id="s4:default"} ${(T0 - DAY) / 1000}`,
    ]);
  });
});
