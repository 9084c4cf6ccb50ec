// promtool reads the storage families as the storage collector fills them from a hostile storage
// API on loopback (not the simulator): 1,050 snapshots on pages of 100, and three volumes, as in
// test/collect/storage.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storageCollector } from "../../src/collect/storage/storage.js";
import { FakeClock } from "../../src/util/clock.js";
import { type JsonAnswer, startJsonApi } from "../helpers/json-api.js";
import { testPoller, tickAndWait } from "../helpers/poller.js";
import { promtool, promtoolReady } from "../helpers/promtool.js";
import { linesOf, metricsWith, scrapeText, T0 } from "../metrics/fixtures.js";

const INTERVAL = 1_000;
const SNAPSHOTS = 1_050;
const VOLUMES = [
  { volumeID: "v-1", name: "a" },
  { volumeID: "v-2", name: "b" },
  { volumeID: "v-3", name: "c" },
];

/** Snapshot records newest first, as E2B lists them. */
const snapshots = Array.from({ length: SNAPSHOTS }, (_, k) => ({
  snapshotID: `snap-${String(SNAPSHOTS - 1 - k).padStart(5, "0")}:default`,
  names: [],
}));

/** Details of snapshot k: made k hours after T0 - 60 days; every third never used. */
function detail(k: number): JsonAnswer {
  const createdAt = T0 - 60 * 86_400_000 + k * 3_600_000;
  const lastSpawnedAt = k % 3 === 0 ? null : new Date(createdAt + 60_000).toISOString();
  return [
    200,
    {
      templateID: `snap-${k}`,
      createdAt: new Date(createdAt).toISOString(),
      lastSpawnedAt,
      spawnCount: k % 3 === 0 ? 0 : 1,
      builds: [],
    },
  ];
}

/** /volumes whole, /snapshots paged by `limit` (at most 100) and `nextToken`, details by raw id. */
function route(url: URL): JsonAnswer {
  if (url.pathname === "/volumes") return [200, VOLUMES];
  const snap = /^\/templates\/snap-(\d+)$/.exec(url.pathname);
  if (snap) return detail(Number(snap[1]));
  if (url.pathname !== "/snapshots") return [404, { code: 404, message: "no route" }];
  const limit = Math.min(100, Number(url.searchParams.get("limit") ?? 100));
  const from = Number(url.searchParams.get("nextToken") ?? 0);
  const page = snapshots.slice(from, from + limit);
  const next = from + page.length;
  return [200, page, next < snapshots.length ? { "X-Next-Token": String(next) } : {}];
}

const clock = new FakeClock(T0);
let api: Awaited<ReturnType<typeof startJsonApi>>;

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
  api = await startJsonApi(route, clock);
}, 90_000);
afterAll(() => api?.close());

describe("promtool check metrics", () => {
  it("passes the storage families of 1,050 snapshots on 11 pages and 3 volumes", async () => {
    const poller = testPoller({
      reader: api.control,
      clock,
      intervalMs: INTERVAL,
      collectors: [storageCollector],
      poll: { storage: true, storagePerSnapshotMetrics: true },
    });
    clock.advance(INTERVAL);
    const s = await tickAndWait(poller);
    // 11 pages of snapshots, 1 of volumes, and the details of the 50 newest (the default).
    expect(s.collectors.storage).toMatchObject({ success: true, requests: 62 });
    const { metrics } = metricsWith();
    metrics.update(s);
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_storage_snapshots")).toEqual(["sandbox_storage_snapshots 1050"]);
    expect(linesOf(text, "sandbox_storage_volumes")).toEqual(["sandbox_storage_volumes 3"]);
    // The 50 newest have details (made 16 to 18 days ago, 16 never used); the rest age from now.
    expect(linesOf(text, "sandbox_storage_snapshots_by_age")).toEqual([
      'sandbox_storage_snapshots_by_age{age="lt_1d"} 1000',
      'sandbox_storage_snapshots_by_age{age="1d_to_7d"} 0',
      'sandbox_storage_snapshots_by_age{age="7d_to_30d"} 50',
      'sandbox_storage_snapshots_by_age{age="ge_30d"} 0',
    ]);
    expect(linesOf(text, "sandbox_storage_snapshots_never_used")).toEqual([
      "sandbox_storage_snapshots_never_used 16",
    ]);
    expect(linesOf(text, "sandbox_snapshot_created_timestamp_seconds")).toHaveLength(50);
    expect(promtool(text).status).toBe(0);
  });
});
