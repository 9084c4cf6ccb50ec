// The teamMetrics collector against a hand-written E2B team-metrics server over loopback: the
// latest point and the maxima read and exported with the team label, the maxima read at most once
// a minute, a failing max read costing only the maxima (kept, marked, asked a minute later), `[]`
// read as unknown (no series, never 0), a bad point dropped and counted, a 404 found unsupported,
// and a team id unknown (a named error, no request) until one is learned.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import { teamMetricsCollector } from "../../src/collect/team-metrics/team-metrics.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { advanceAndTick } from "../helpers/cycle.js";
import { listenLoopback } from "../helpers/loopback.js";
import { type TestPollerOptions, testPoller } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 15_000;
const TEAM = "5f1c3a2e-0000-4000-8000-00000000abcd";
const T0 = 1_790_000_000_000;

/** What the fake platform answers, set by each test. */
interface Upstream {
  /** Body of GET /teams/{TEAM}/metrics. */
  points: unknown;
  /** Body of GET /teams/{TEAM}/metrics/max, by metric. */
  max: Record<string, unknown>;
  /** A status answered to both team routes instead of their bodies. */
  status?: number;
  /** A status answered to the max route only. */
  maxStatus?: number;
  /** Every team request: path and query. */
  asked: Array<{ path: string; query: URLSearchParams }>;
}

let up: Upstream;
let clock: FakeClock;
let control: ControlClient;
let close: () => Promise<void>;

/** E2B's routes as packages/api/internal/handlers/team_metrics*.go serve them, and an empty walk. */
function route(url: URL): [number, unknown] {
  const m = /^\/teams\/([^/]+)\/metrics(\/max)?$/.exec(url.pathname);
  if (!m)
    return url.pathname === "/v2/sandboxes"
      ? [200, []]
      : [404, { code: 404, message: "not found" }];
  up.asked.push({ path: url.pathname, query: url.searchParams });
  if (up.status !== undefined) return [up.status, { code: up.status, message: "no" }];
  const team = decodeURIComponent(m[1] as string);
  if (team !== TEAM)
    return [
      403,
      {
        code: 403,
        message: `You (${TEAM}) are not authorized to access this team's (${team}) metrics`,
      },
    ];
  if (!m[2]) return [200, up.points];
  if (up.maxStatus !== undefined) return [up.maxStatus, { code: up.maxStatus, message: "no max" }];
  return [200, up.max[url.searchParams.get("metric") ?? ""] ?? {}];
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const [status, body] = route(new URL(req.url ?? "/", "http://x"));
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

beforeAll(async () => {
  clock = new FakeClock(T0);
  const server = createServer(handle);
  const l = await listenLoopback(server);
  close = l.close;
  control = testControl({
    apiUrl: l.url,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    dispatcher: new Agent(),
  });
});
beforeEach(() => {
  clock.set(T0);
  up = {
    points: [
      point(T0 - 20_000, 7, 0.2),
      point(T0 - 5_000, 9, 0.4),
      // Out of order on purpose: the newest point is the one with the latest time.
      point(T0 - 10_000, 8, 0.3),
    ],
    max: {
      concurrent_sandboxes: { timestampUnix: (T0 - 600_000) / 1000, value: 17 },
      sandbox_start_rate: { timestampUnix: (T0 - 900_000) / 1000, value: 1.5 },
    },
    asked: [],
  };
});
afterAll(async () => {
  await control.close();
  await close();
});

function point(atMs: number, concurrent: unknown, rate: unknown): Record<string, unknown> {
  return {
    timestamp: new Date(atMs).toISOString(),
    timestampUnix: atMs / 1000,
    concurrentSandboxes: concurrent,
    sandboxStartRate: rate,
  };
}

function poller(over: Partial<TestPollerOptions> = {}): Poller {
  return testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    collectors: [teamMetricsCollector],
    teamId: () => TEAM,
    ...over,
    poll: { teamMetrics: true, ...over.poll },
  });
}

const cycle = (p: Poller): Promise<Snapshot> => advanceAndTick(p, clock, INTERVAL);

async function scrape(s: Snapshot): Promise<string> {
  const { metrics } = metricsWith();
  metrics.update(s);
  return scrapeText(metrics);
}

describe("teamMetrics collector", () => {
  it("is off by default: no team request, and its status says skipped", async () => {
    const s = await cycle(poller({ poll: { teamMetrics: false } }));
    expect(up.asked).toEqual([]);
    expect(s.collectors.teamMetrics).toMatchObject({ skipped: true });
    expect(s.teamMetrics).toBeUndefined();
  });

  it("runs on shard 0 only", async () => {
    const s = await cycle(poller({ clusterWide: false }));
    expect(up.asked).toEqual([]);
    expect(s.collectors.teamMetrics).toMatchObject({ skipped: true });
  });

  it("reads the newest point of the last 5 minutes and the maxima over the window, and exports them", async () => {
    const s = await cycle(poller({ poll: { teamMetricsWindowMs: 2 * 3_600_000 } }));
    const now = T0 + INTERVAL;
    expect(s.collectors.teamMetrics).toMatchObject({ success: true, requests: 3 });
    expect(s.teamMetrics).toEqual({
      teamId: TEAM,
      latest: { at: T0 - 5_000, concurrentSandboxes: 9, startRate: 0.4 },
      max: { concurrentSandboxes: 17, startRate: 1.5, readAt: now, windowMs: 7_200_000 },
    });
    // Unix seconds, as E2B's handlers read them.
    const [latest, ...maxima] = up.asked;
    expect(latest?.path).toBe(`/teams/${TEAM}/metrics`);
    expect(Object.fromEntries(latest?.query ?? [])).toEqual({
      start: String((now - 300_000) / 1000),
      end: String(now / 1000),
    });
    expect(
      maxima
        .map((a) => Object.fromEntries(a.query))
        .sort((a, b) => (a.metric ?? "").localeCompare(b.metric ?? "")),
    ).toEqual([
      {
        metric: "concurrent_sandboxes",
        start: String((now - 7_200_000) / 1000),
        end: String(now / 1000),
      },
      {
        metric: "sandbox_start_rate",
        start: String((now - 7_200_000) / 1000),
        end: String(now / 1000),
      },
    ]);

    const text = await scrape(s);
    expect(linesOf(text, "sandbox_team_concurrent_sandboxes")).toEqual([
      `sandbox_team_concurrent_sandboxes{team="${TEAM}"} 9`,
    ]);
    expect(linesOf(text, "sandbox_team_sandbox_start_rate")).toEqual([
      `sandbox_team_sandbox_start_rate{team="${TEAM}"} 0.4`,
    ]);
    expect(linesOf(text, "sandbox_team_concurrent_sandboxes_max")).toEqual([
      `sandbox_team_concurrent_sandboxes_max{team="${TEAM}"} 17`,
    ]);
    expect(linesOf(text, "sandbox_team_sandbox_start_rate_max")).toEqual([
      `sandbox_team_sandbox_start_rate_max{team="${TEAM}"} 1.5`,
    ]);
    expect(text).toContain(
      "# HELP sandbox_team_concurrent_sandboxes_max Most sandboxes the team ran at once over the last 2h.",
    );
  });

  it("reads the maxima at most once a minute, keeping the last ones in between, raised to a newer peak", async () => {
    const p = poller();
    await cycle(p);
    up.asked = [];
    // 15 s later: the maxima are kept, and a newer point above them raises them.
    up.points = [point(T0 + 20_000, 25, 0.1)];
    const second = await cycle(p);
    expect(up.asked.map((a) => a.path)).toEqual([`/teams/${TEAM}/metrics`]);
    expect(second.collectors.teamMetrics).toMatchObject({ success: true, requests: 1 });
    expect(second.teamMetrics?.max).toMatchObject({ concurrentSandboxes: 25, startRate: 1.5 });
    for (let i = 0; i < 3; i++) await cycle(p);
    // 60 s after the first read of the maxima: read again.
    expect(up.asked.filter((a) => a.path.endsWith("/max"))).toHaveLength(2);
  });

  it("a failing max read keeps the latest point and the maxima read before (marked), asked again a minute later", async () => {
    const p = poller();
    const first = await cycle(p);
    expect(first.teamMetrics?.max).toMatchObject({ concurrentSandboxes: 17 });
    expect(linesOf(await scrape(first), "sandbox_team_metrics_max_stale")).toEqual([
      `sandbox_team_metrics_max_stale{team="${TEAM}"} 0`,
    ]);
    up.maxStatus = 500;
    // Three ticks within the minute, then the read of the maxima: it fails.
    for (let i = 0; i < 3; i++) await cycle(p);
    up.asked = [];
    up.points = [point(T0 + 55_000, 11, 0.6)];
    const failed = await cycle(p);
    expect(up.asked.filter((a) => a.path.endsWith("/max"))).toHaveLength(2);
    expect(failed.collectors.teamMetrics).toMatchObject({ success: true, stale: false });
    expect(failed.teamMetrics?.latest).toEqual({
      at: T0 + 55_000,
      concurrentSandboxes: 11,
      startRate: 0.6,
    });
    expect(failed.teamMetrics?.max).toMatchObject({ concurrentSandboxes: 17, startRate: 1.5 });
    expect(failed.teamMetrics?.maxFailed).toMatchObject({ code: "ERR_PLATFORM_HTTP" });
    const text = await scrape(failed);
    expect(linesOf(text, "sandbox_team_concurrent_sandboxes")).toEqual([
      `sandbox_team_concurrent_sandboxes{team="${TEAM}"} 11`,
    ]);
    expect(linesOf(text, "sandbox_team_concurrent_sandboxes_max")).toEqual([
      `sandbox_team_concurrent_sandboxes_max{team="${TEAM}"} 17`,
    ]);
    expect(linesOf(text, "sandbox_team_metrics_max_stale")).toEqual([
      `sandbox_team_metrics_max_stale{team="${TEAM}"} 1`,
    ]);

    // Not asked again within the minute; still marked.
    up.asked = [];
    for (let i = 0; i < 3; i++)
      expect((await cycle(p)).teamMetrics?.maxFailed).toMatchObject({ code: "ERR_PLATFORM_HTTP" });
    expect(up.asked.filter((a) => a.path.endsWith("/max"))).toEqual([]);
    up.maxStatus = undefined;
    up.max.concurrent_sandboxes = { timestampUnix: T0 / 1000, value: 21 };
    const healed = await cycle(p);
    expect(up.asked.filter((a) => a.path.endsWith("/max"))).toHaveLength(2);
    expect(healed.teamMetrics?.max).toMatchObject({ concurrentSandboxes: 21 });
    expect(healed.teamMetrics?.maxFailed).toBeUndefined();
    expect(linesOf(await scrape(healed), "sandbox_team_metrics_max_stale")).toEqual([
      `sandbox_team_metrics_max_stale{team="${TEAM}"} 0`,
    ]);
  });

  it("a max read failing on the first tick publishes the latest point, and no maxima", async () => {
    up.maxStatus = 503;
    const s = await cycle(poller());
    expect(s.collectors.teamMetrics).toMatchObject({ success: true, requests: 3 });
    expect(s.teamMetrics?.latest?.concurrentSandboxes).toBe(9);
    expect(s.teamMetrics?.max).toBeUndefined();
    const text = await scrape(s);
    expect(linesOf(text, "sandbox_team_concurrent_sandboxes_max")).toEqual([]);
    expect(linesOf(text, "sandbox_team_metrics_max_stale")).toEqual([
      `sandbox_team_metrics_max_stale{team="${TEAM}"} 1`,
    ]);
  });

  it("reads [] as unknown: no series at all, never 0, and does not ask for the maxima", async () => {
    up.points = [];
    const s = await cycle(poller());
    expect(s.collectors.teamMetrics).toMatchObject({ success: true, requests: 1 });
    expect(s.teamMetrics).toEqual({ teamId: TEAM });
    expect(up.asked.map((a) => a.path)).toEqual([`/teams/${TEAM}/metrics`]);
    const text = await scrape(s);
    expect(text).not.toContain("sandbox_team_");
  });

  it("drops a bad point and counts it, keeping the good ones", async () => {
    up.points = [
      point(T0 - 10_000, 4, 0.1),
      point(T0 - 5_000, "many", 0.2),
      { concurrentSandboxes: 3, sandboxStartRate: 0.1 },
      "not a point",
    ];
    const before = {
      concurrent: control.invalid.get("team_metrics", "concurrent_sandboxes"),
      timestamp: control.invalid.get("team_metrics", "timestamp"),
      record: control.invalid.get("team_metrics", "record"),
    };
    const s = await cycle(poller());
    expect(s.teamMetrics?.latest).toEqual({
      at: T0 - 10_000,
      concurrentSandboxes: 4,
      startRate: 0.1,
    });
    expect(control.invalid.get("team_metrics", "concurrent_sandboxes") - before.concurrent).toBe(1);
    expect(control.invalid.get("team_metrics", "timestamp") - before.timestamp).toBe(1);
    expect(control.invalid.get("team_metrics", "record") - before.record).toBe(1);
  });

  it("is unsupported where the platform answers 404 before any success", async () => {
    up.status = 404;
    const p = poller();
    const first = await cycle(p);
    expect(first.collectors.teamMetrics).toMatchObject({ unsupported: true, success: false });
    expect(first.teamMetrics).toBeUndefined();
    const asked = up.asked.length;
    // Within poll.capabilityRecheck (10 intervals here) it is not asked again.
    for (let i = 0; i < 3; i++) await cycle(p);
    expect(up.asked.length).toBe(asked);
  });

  it("with another team's id is refused (403), and the answer names the key's own team", async () => {
    const s = await cycle(poller({ teamId: () => "someone-else" }));
    expect(s.collectors.teamMetrics).toMatchObject({ unsupported: true, success: false });
    expect(s.collectors.teamMetrics.error?.message).toContain(`You (${TEAM}) are not authorized`);
  });

  it("without a team id fails with ERR_TEAM_ID_UNKNOWN and asks nothing, then reads once one is learned", async () => {
    let learned: string | undefined;
    const p = poller({ teamId: () => learned });
    const first = await cycle(p);
    expect(first.collectors.teamMetrics).toMatchObject({
      success: false,
      error: { code: "ERR_TEAM_ID_UNKNOWN" },
    });
    expect(first.collectors.teamMetrics.unsupported).toBeFalsy();
    expect(up.asked).toEqual([]);
    expect(await scrape(first)).not.toContain("sandbox_team_concurrent_sandboxes");

    learned = TEAM;
    const second = await cycle(p);
    expect(second.collectors.teamMetrics).toMatchObject({ success: true });
    expect(second.teamMetrics?.latest?.concurrentSandboxes).toBe(9);
  });
});
