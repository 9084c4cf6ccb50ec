// The templateBuilds collector against a hostile E2B template API written apart from the simulator:
// thousands of templates whose latest build failed, and a build-status route answering 500. The
// status reads are capped per tick (longest waiting first, so every build is read in the end), each
// is one attempt however many retries the channel allows, and a build whose read failed waits
// doubling ticks (up to MAX_BACKOFF_TICKS) before the next.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent } from "undici";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import {
  backoffTicks,
  MAX_BACKOFF_TICKS,
  templateBuildsCollector,
} from "../../src/collect/template-builds/template-builds.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { advanceAndTick } from "../helpers/cycle.js";
import { listenLoopback } from "../helpers/loopback.js";
import { testPoller } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 2_000;
const STATUS = /^\/templates\/([^/]+)\/builds\/([^/]+)\/status$/;

/** The hostile platform's state, set by each test. */
interface Platform {
  /** Template ids, in list order; each one's latest build `b-<id>` failed. */
  templates: string[];
  /** What the build-status route answers: the reason, or this status. */
  statusAnswer: "reason" | number;
  /** Template ids whose build the status route no longer knows: 404 for those alone. */
  gone: Set<string>;
  /** Status reads per template id. */
  reads: Map<string, number>;
  /** Every request, by route. */
  lists: number;
  statusReads: number;
}

let up: Platform;
let clock: FakeClock;
let control: ControlClient;
let close: () => Promise<void>;

function route(url: URL): [number, unknown] {
  if (url.pathname === "/v2/sandboxes") return [200, []];
  if (url.pathname === "/templates") {
    up.lists++;
    return [
      200,
      up.templates.map((id) => ({ templateID: id, buildID: `b-${id}`, buildStatus: "error" })),
    ];
  }
  const m = STATUS.exec(url.pathname);
  if (!m) return [404, { code: 404, message: "not found" }];
  const id = decodeURIComponent(m[1] as string);
  up.statusReads++;
  up.reads.set(id, (up.reads.get(id) ?? 0) + 1);
  if (up.gone.has(id)) return [404, { code: 404, message: "build not found" }];
  if (up.statusAnswer !== "reason")
    return [up.statusAnswer, { code: up.statusAnswer, message: "build status unavailable" }];
  return [
    200,
    {
      templateID: id,
      buildID: m[2],
      status: "error",
      logs: [],
      reason: { message: `build of ${id} failed`, step: "run" },
    },
  ];
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const [status, body] = route(new URL(req.url ?? "/", "http://x"));
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  const l = await listenLoopback(createServer(handle));
  close = l.close;
  // The channel's default retries: a status read must still be one request.
  control = testControl({
    apiUrl: l.url,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    retries: 2,
    sleep: async () => {},
    dispatcher: new Agent(),
  });
});
beforeEach(() => {
  up = {
    templates: [],
    statusAnswer: "reason",
    gone: new Set(),
    reads: new Map(),
    lists: 0,
    statusReads: 0,
  };
});
afterAll(async () => {
  await control.close();
  await close();
});

function ids(n: number, prefix = "t"): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, "0")}`);
}

function poller(maxReads: number): Poller {
  return testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    collectors: [templateBuildsCollector],
    poll: { templateBuilds: true, templateBuildsMaxReads: maxReads },
  });
}

/** One tick; the snapshot and the status reads it made (counted by the platform). */
async function cycle(p: Poller): Promise<{ s: Snapshot; reads: number }> {
  const before = up.statusReads;
  const s = await advanceAndTick(p, clock, INTERVAL);
  return { s, reads: up.statusReads - before };
}

function unread(s: Snapshot): number {
  return (s.templateBuilds ?? []).filter((b) => b.unread !== undefined).length;
}

describe("template builds at scale, against a hostile platform", () => {
  it("2,000 failed builds: the first tick reads at most the cap and publishes; the rest follow, longest waiting first, each once", async () => {
    const CAP = 50;
    up.templates = ids(2_000);
    const p = poller(CAP);
    const first = await cycle(p);
    expect(first.reads).toBe(CAP);
    expect(first.s.collectors.templateBuilds).toMatchObject({
      success: true,
      requests: 1 + CAP,
    });
    expect(first.s.templateBuilds).toHaveLength(2_000);
    expect(unread(first.s)).toBe(2_000 - CAP);
    const { metrics } = metricsWith();
    metrics.update(first.s);
    expect(
      linesOf(await scrapeText(metrics), "sandbox_template_build_failure_reasons_unread"),
    ).toEqual([`sandbox_template_build_failure_reasons_unread ${2_000 - CAP}`]);

    // Failures listed later queue behind the older ones, whatever their ids.
    const late = ids(10, "0-late");
    up.templates = [...late, ...up.templates];
    let ticks = 1;
    let last = first.s;
    while (unread(last) > 0 && ticks < 100) {
      const { s, reads } = await cycle(p);
      ticks++;
      expect(reads).toBeLessThanOrEqual(CAP);
      expect(s.collectors.templateBuilds.success).toBe(true);
      if (unread(s) > late.length) expect(late.every((id) => !up.reads.has(id))).toBe(true);
      last = s;
    }
    expect(ticks).toBe(Math.ceil(2_010 / CAP));
    expect(unread(last)).toBe(0);
    // Every build read exactly once, its reason kept.
    expect(up.reads.size).toBe(2_010);
    expect([...up.reads.values()].every((n) => n === 1)).toBe(true);
    expect(last.templateBuilds?.every((b) => b.failure?.step === "run")).toBe(true);
    const { s } = await cycle(p);
    expect(up.statusReads).toBe(2_010);
    expect(s.collectors.templateBuilds.requests).toBe(1);
  });

  it("a status route answering 500: one request per read, each build's reads spaced by doubling ticks, capped", async () => {
    up.templates = ids(10);
    up.statusAnswer = 500;
    const p = poller(20);
    const readAt = new Map<string, number[]>();
    const TICKS = 140;
    for (let tick = 1; tick <= TICKS; tick++) {
      const before = new Map(up.reads);
      const { s, reads } = await cycle(p);
      // The list read fine: the collector succeeds, each build's reason simply unknown.
      expect(s.collectors.templateBuilds.success).toBe(true);
      expect(reads).toBeLessThanOrEqual(up.templates.length);
      for (const [id, n] of up.reads) {
        // At most one request per build and tick, whatever the channel's retries.
        expect(n - (before.get(id) ?? 0)).toBeLessThanOrEqual(1);
        if (n > (before.get(id) ?? 0)) readAt.set(id, [...(readAt.get(id) ?? []), tick]);
      }
    }
    // Each build: read on ticks 1, 3, 6, 11, 20, 37, 70, 103, 136 (it waits 1, 2, 4 ... 32 ticks).
    const expected = [1];
    for (let f = 1; ; f++) {
      const next = (expected.at(-1) as number) + backoffTicks(f) + 1;
      if (next > TICKS) break;
      expected.push(next);
    }
    expect(expected.slice(0, 6)).toEqual([1, 3, 6, 11, 20, 37]);
    expect(backoffTicks(99)).toBe(MAX_BACKOFF_TICKS);
    for (const id of up.templates) expect(readAt.get(id)).toEqual(expected);
    // 10 builds over 140 ticks: 90 requests, where one read a tick with two retries makes 4,200.
    expect(up.statusReads).toBe(10 * expected.length);
  });

  it("500 answers with more failed builds than the cap: every tick within the cap, and every build read once the route heals", async () => {
    const CAP = 10;
    up.templates = ids(100);
    up.statusAnswer = 500;
    const p = poller(CAP);
    const perTick: number[] = [];
    for (let tick = 1; tick <= 150; tick++) perTick.push((await cycle(p)).reads);
    // The first ticks are full, then the backoff thins them out: about 100 / 33 reads a tick.
    expect(Math.max(...perTick)).toBe(CAP);
    expect(perTick.slice(0, 10)).toEqual(Array(10).fill(CAP));
    expect(up.reads.size).toBe(100);
    const tail = perTick.slice(-33).reduce((a, b) => a + b, 0);
    expect(tail).toBe(100);

    up.statusAnswer = "reason";
    let last: Snapshot | undefined;
    for (let tick = 0; tick <= MAX_BACKOFF_TICKS + 100 / CAP; tick++) {
      const { s, reads } = await cycle(p);
      expect(reads).toBeLessThanOrEqual(CAP);
      last = s;
      if (unread(s) === 0) break;
    }
    expect(last && unread(last)).toBe(0);
    expect(last?.templateBuilds?.every((b) => b.failure?.message.startsWith("build of"))).toBe(
      true,
    );
  });

  it("a 404 on one build's status once others were read: that build backs off, the collector keeps succeeding", async () => {
    up.templates = ids(3);
    const p = poller(20);
    const first = await cycle(p);
    expect(first.s.collectors.templateBuilds).toMatchObject({ success: true });
    expect(unread(first.s)).toBe(0);
    // A new failed build whose status the platform no longer knows (deleted since, say).
    up.templates = [...up.templates, "t-gone"];
    up.gone.add("t-gone");
    const ticks: number[] = [];
    for (let tick = 1; tick <= 6; tick++) {
      const before = up.reads.get("t-gone") ?? 0;
      const { s } = await cycle(p);
      expect(s.collectors.templateBuilds.success, `tick ${tick}`).toBe(true);
      expect(s.collectors.templateBuilds.unsupported ?? false, `tick ${tick}`).toBe(false);
      expect(s.templateBuilds?.filter((b) => b.failure !== undefined)).toHaveLength(3);
      if ((up.reads.get("t-gone") ?? 0) > before) ticks.push(tick);
    }
    // Read on ticks 1, 3 and 6 (waiting 1, then 2 ticks), not on every tick.
    expect(ticks).toEqual([1, 3, 6]);
  });
});
