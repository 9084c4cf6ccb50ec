// Freshness on a hostile upstream (not the simulator), two ways it broke:
// - E2B serves no /cluster/overview (404) and /nodes only to admins (403): the frozen outcomes of
//   those unsupported collectors must not age the data the policy checks, nor the cycle's start;
// - one slow or hanging GET /events/sandboxes must not hold back health, templates and the walk:
//   each collector fails on its own, with its own deadline, and the others stay fresh.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { FakeClock } from "../../src/util/clock.js";
import { createLogger } from "../../src/util/logger.js";
import { scrapeSamples, series } from "./checks.js";
import { json, send } from "./faults.js";
import { type Fleet, makeFleet, makeSandbox, rng } from "./fleet.js";
import { API_KEY, configFor, get, IDLE_CHAOS_RULES, LogSink, statusOf } from "./harness.js";
import { PREFIX, startUpstream, Upstream } from "./upstream.js";

const MIN = 60_000;
/** A whole second, so the fake clock and the upstream's timestamps agree to the ms. */
const T0 = Math.floor(Date.now() / 1000) * 1000;
const STALE = "sandbox_exporter_collect_stale";

let stops: Array<() => Promise<void>> = [];

afterEach(async () => {
  // The upstream first: its sockets cut, a read still hanging ends, and the exporter stops at once.
  for (const stop of stops.reverse()) await stop();
  stops = [];
});

/** An exporter on `up`, on a fake clock, with manual cycles, logging into memory. */
async function exporterOn(up: Upstream, argv: string[], clock: FakeClock): Promise<Exporter> {
  const files: Record<string, string> = { "rules.yaml": IDLE_CHAOS_RULES };
  const readFile = (path: string): string => {
    const text = files[path];
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text;
  };
  const config = configFor(up, argv, files);
  const logger = createLogger(config.log.level, "json", new LogSink());
  const e = await startExporter(config, { logger, clock, manual: true, readFile });
  stops.unshift(() => e.stop());
  return e;
}

/** A fleet with two idle sandboxes the policy would pause. */
function fleetWithIdle(): Fleet {
  const fleet = makeFleet(50);
  const r = rng(11);
  for (let i = 0; i < 2; i++) {
    const s = makeSandbox(r, 10_000 + i);
    s.state = "running";
    s.startedAt = T0 - 180 * MIN;
    s.lastLogAt = T0 - 120 * MIN;
    s.metadata = { chaos: "idle" };
    fleet.sandboxes.set(s.sandboxID, s);
  }
  return fleet;
}

describe("chaos: E2B's unsupported /cluster/overview (404) and admin-only /nodes (403)", () => {
  it("keeps the policy deciding past maxSnapshotAgeMs, and starts each cycle at its own reads", async () => {
    const up = await startUpstream({ apiKey: API_KEY, fleet: fleetWithIdle() });
    stops.push(() => up.close());
    up.fault("GET /cluster/overview", { kind: "status", status: 404 });
    up.fault("GET /nodes", { kind: "status", status: 403 });
    const clock = new FakeClock(T0);
    const e = await exporterOn(up, ["--policy", "rules.yaml"], clock);
    // Every 90 s for 6 minutes: past the 2 min age limit, short of the 10 min capability re-check.
    for (let i = 0; i <= 4; i++) {
      if (i > 0) clock.advance(90_000);
      const s = await e.runCycle();
      expect(s?.collectors.overview.unsupported, "overview unsupported").toBe(true);
      expect(s?.collectors.nodes.unsupported, "nodes unsupported").toBe(true);
      const run = e.policy?.lastRun;
      expect(run?.blocked, `policy run ${i} at +${i * 90} s`).toBeUndefined();
      expect(run?.outcomes.length, `decisions of run ${i}`).toBeGreaterThan(0);
      const status = JSON.parse((await get({ e }, "/status")).text) as Record<string, unknown>;
      expect(status.cycleStarted, `cycle ${i}'s start`).toBe(new Date(clock.now()).toISOString());
    }
    // Asked once each: unsupported, left alone until the re-check.
    expect(up.count("GET /cluster/overview")).toBe(1);
    expect(up.count("GET /nodes")).toBe(1);
    const m = await scrapeSamples({ e });
    expect(series(m, "sandbox_policy_blocked_total", 'reason="stale"') ?? 0).toBe(0);
  });
});

/** How GET /events/sandboxes answers: full pages after `delayMs`, or never. */
type EventsMode = { kind: "slow"; delayMs: number } | { kind: "hang" };

/** What the events route saw. */
interface EventsStats {
  requests: number;
  inFlight: number;
  maxInFlight: number;
  /** Resolves when the first request's connection closes (answered, or cut by either side). */
  firstClosed: Promise<void>;
}

/** The hostile upstream, plus GET /events/sandboxes answering as `mode` says; the rest is its own. */
async function upstreamWithEvents(mode: EventsMode): Promise<{ up: Upstream; stats: EventsStats }> {
  const up = new Upstream({ apiKey: API_KEY, fleet: makeFleet(50) });
  let firstClosed = (): void => undefined;
  const stats: EventsStats = {
    requests: 0,
    inFlight: 0,
    maxInFlight: 0,
    firstClosed: new Promise((resolve) => {
      firstClosed = resolve;
    }),
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://upstream");
    if (url.pathname !== `${PREFIX}/events/sandboxes`) {
      up.handle(req, res).catch(() => res.destroy());
      return;
    }
    stats.requests++;
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    res.on("close", () => {
      stats.inFlight--;
      firstClosed();
    });
    if (mode.kind === "hang") return;
    // Newest first, a second apart, all within the look-back: every page is full.
    const offset = Number(url.searchParams.get("offset") ?? 0);
    const limit = Number(url.searchParams.get("limit") ?? 100);
    const page = Array.from({ length: limit }, (_, i) => ({
      id: `ev-${offset + i}`,
      type: "sandbox.lifecycle.created",
      sandboxId: `sb-ev-${offset + i}`,
      sandboxTemplateId: "base",
      sandboxTeamId: "team-1",
      timestamp: new Date(T0 - (offset + i) * 100).toISOString(),
    }));
    const timer = setTimeout(() => send(res, json(200, page)), mode.delayMs);
    res.on("close", () => clearTimeout(timer));
  });
  up.track(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  up.apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stops.push(() => up.close());
  return { up, stats };
}

const INTERVAL_MS = 1_000;
const TICKS = 6;

/** Real ms `f` took. */
async function timed(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

describe("chaos: only GET /events/sandboxes is slow", () => {
  it.each<[string, EventsMode, string[]]>([
    ["each page just inside the 1 s timeout", { kind: "slow", delayMs: 800 }, []],
    ["hanging past the deadline (10 s timeout)", { kind: "hang" }, ["--timeout", "10s"]],
  ])("keeps health, templates and the walk fresh: %s", async (_name, mode, argv) => {
    const { up, stats } = await upstreamWithEvents(mode);
    const clock = new FakeClock(T0);
    const e = await exporterOn(
      up,
      ["--poll-schedule", `${INTERVAL_MS / 1000}s`, "--poll-events", ...argv],
      clock,
    );
    for (let i = 0; i < TICKS; i++) {
      if (i > 0) clock.advance(INTERVAL_MS);
      // The tick publishes what ended; it does not wait for the events.
      const ms = await timed(() => e.poller.tick());
      expect(ms, `tick ${i} took (real ms)`).toBeLessThan(INTERVAL_MS);
      expect((await get({ e }, "/readyz")).status, `/readyz after tick ${i}`).toBe(200);
      const m = await scrapeSamples({ e });
      const status = JSON.parse((await get({ e }, "/status")).text) as {
        collectors: Record<string, { dataAgeSeconds: number | null }>;
      };
      for (const c of ["health", "templates", "sandboxes"]) {
        expect(series(m, STALE, `collector="${c}"`), `${c} stale after tick ${i}`).toBe(0);
        const age = status.collectors[c]?.dataAgeSeconds;
        expect(age, `${c} data age after tick ${i}`).not.toBeNull();
        expect(age, `${c} data age after tick ${i}`).toBeLessThanOrEqual(INTERVAL_MS / 1000);
      }
    }
    // A walk every tick (one page of 50 sandboxes each), and never two event reads at once.
    expect(up.count("GET /v2/sandboxes"), "walks").toBe(TICKS);
    expect(stats.maxInFlight, "events requests in flight at once").toBe(1);
    if (mode.kind === "hang") {
      // One read, still hanging: failed at its deadline, not started again.
      expect(stats.requests, "events requests").toBe(1);
      // The deadline is one interval of real time after the read began: wait for it (bounded).
      await vi.waitFor(
        async () => {
          const { doc } = await statusOf({ e });
          expect(doc.collectors.events).toMatchObject({
            success: false,
            stale: true,
            error: { code: "ERR_COLLECTOR_DEADLINE" },
          });
        },
        { timeout: 5_000, interval: 50 },
      );
    }
  });
});

describe("chaos: stopping while GET /events/sandboxes hangs", () => {
  it("stop() cuts the read the poller gave up on instead of waiting out its 60 s timeout", async () => {
    const { up, stats } = await upstreamWithEvents({ kind: "hang" });
    const clock = new FakeClock(T0);
    const config = configFor(up, ["--poll-schedule", "1s", "--poll-events", "--timeout", "60s"]);
    const logger = createLogger(config.log.level, "json", new LogSink());
    const e = await startExporter(config, { logger, clock, manual: true });
    await e.poller.tick();
    expect(stats.inFlight, "events requests hanging").toBe(1);
    // The upstream stays up: only the exporter can end that request. Without a bound, stop()
    // waits for it (60 s, past the test's 30 s timeout).
    await e.stop();
    await stats.firstClosed;
    expect(stats.inFlight).toBe(0);
    expect(stats.requests).toBe(1);
  });
});
