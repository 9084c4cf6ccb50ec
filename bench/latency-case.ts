// /metrics latency while poll cycles run, measured from outside: the exporter child polls on a
// fixed schedule driven from here while this process scrapes it as Prometheus does (its Accept
// header, gzip, one connection, every SCRAPE_EVERY_MS). Each scrape is classed by whether it
// overlapped a cycle, from the cycle's start until its exposition (gzip included) was cached.
import { type ExporterChild, LIFTED_BUDGET } from "./exporter-case.js";
import { epochMs, forkChild } from "./ipc.js";
import { PROMETHEUS_ACCEPT, percentiles, ScrapeClient, type TimedScrape } from "./scrape-client.js";

const PAGE = 100;
const SCRAPE_EVERY_MS = 100;
const WARM_CYCLES = 2;

/**
 * The bench's latency case: a cycle every 3 s for `seconds` (BENCH_LATENCY_SECONDS, default 30),
 * then a third of that of scrapes with no cycle. The full run and the paired runs use the same.
 */
export function latencyOptions(seconds = Number(process.env.BENCH_LATENCY_SECONDS ?? 30)): {
  scheduleMs: number;
  forMs: number;
  idleMs: number;
} {
  return { scheduleMs: 3_000, forMs: seconds * 1000, idleMs: (seconds * 1000) / 3 };
}

/** Latency of a class of scrapes, ms. */
export interface LatencyFigures {
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** What the latency case measured. */
export interface LatencyCase {
  sandboxes: number;
  scheduleMs: number;
  scrapeEveryMs: number;
  cycles: number;
  /** Median ms from a cycle's start until its exposition and gzip were cached. */
  cycleToCachedMs: number;
  /** Median of the same cycles' walks (the poller's own start to end of the sandbox list). */
  walkMs: number;
  /** Median over the cycles of each one's start-to-cached time over its own walk. */
  cycleToCachedVsWalk: number;
  bytesGzip: number;
  duringCycles: LatencyFigures;
  betweenCycles: LatencyFigures;
  /** The same exporter and data, scraped the same way with no cycle running. */
  idle: LatencyFigures;
  /** The exporter's event-loop delay (its own monitor, 10 ms resolution) during the cycle phase. */
  loopDelayDuringCycles: { p50Ms: number; p99Ms: number; maxMs: number };
}

interface CycleWindow {
  startAt: number;
  settledAt: number;
  walkMs: number;
}

function figures(scrapes: TimedScrape[]): LatencyFigures {
  const ms = scrapes.map((s) => s.ms);
  return { ...percentiles(ms), maxMs: ms.length ? Math.max(...ms) : Number.NaN };
}

/**
 * Per-sandbox series on, polls every `scheduleMs` for `forMs` while scraping every 100 ms; then
 * scrapes for `idleMs` with no cycle.
 */
export async function latencyCase(
  exporter: ExporterChild,
  apiUrl: string,
  o: { scheduleMs: number; forMs: number; idleMs: number; extraFlags?: string[] },
): Promise<LatencyCase> {
  const child = await forkChild<{ url: string }>(
    exporter.script,
    [
      apiUrl,
      "--page-limit",
      String(PAGE),
      ...LIFTED_BUDGET,
      "--per-sandbox-metrics",
      "--max-sandbox-series",
      "1000000",
      ...(o.extraFlags ?? []),
    ],
    exporter.nodeFlags,
  );
  const client = new ScrapeClient(child.ready.url);
  const style = { gzip: true, accept: PROMETHEUS_ACCEPT };
  try {
    // Steady state: JIT warm, a scraper that asked for gzip, the re-render path.
    for (let i = 0; i < WARM_CYCLES; i++) {
      await child.call("cycle");
      await client.get(style);
    }
    const idle = await client.every(SCRAPE_EVERY_MS, o.idleMs, style);
    const windows: CycleWindow[] = [];
    let sandboxes = 0;
    const end = epochMs() + o.forMs;
    await child.call("loopDelayStart");
    const driver = (async () => {
      // A fixed schedule: a cycle every scheduleMs, or at once when the last one overran.
      for (let due = epochMs(); due < end; due += o.scheduleMs) {
        const wait = due - epochMs();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const c = await child.call<CycleWindow & { sandboxes: number }>("cycle");
        windows.push(c);
        sandboxes = c.sandboxes;
      }
    })();
    const scrapes = await client.every(SCRAPE_EVERY_MS, o.forMs, style);
    await driver;
    const loopDelay = await child.call<LatencyCase["loopDelayDuringCycles"]>("loopDelayStop");
    const overlaps = (s: TimedScrape) =>
      windows.some((w) => s.startAt < w.settledAt && s.endAt > w.startAt);
    const during = scrapes.filter(overlaps);
    const between = scrapes.filter((s) => !overlaps(s));
    const spans = windows.map((w) => w.settledAt - w.startAt).sort((a, b) => a - b);
    const mid = <T>(xs: T[]) => xs[Math.floor(xs.length / 2)];
    const byWalk = windows.map((w) => (w.settledAt - w.startAt) / w.walkMs).sort((a, b) => a - b);
    return {
      sandboxes,
      scheduleMs: o.scheduleMs,
      scrapeEveryMs: SCRAPE_EVERY_MS,
      cycles: windows.length,
      cycleToCachedMs: mid(spans) ?? Number.NaN,
      walkMs: mid(windows.map((w) => w.walkMs).sort((a, b) => a - b)) ?? Number.NaN,
      cycleToCachedVsWalk: mid(byWalk) ?? Number.NaN,
      bytesGzip: scrapes.at(-1)?.bytes ?? 0,
      duringCycles: figures(during),
      betweenCycles: figures(between),
      idle: figures(idle),
      loopDelayDuringCycles: loopDelay,
    };
  } finally {
    await client.close();
    await child.stop();
  }
}
