// One million sandboxes (`npm run bench -- --1m`, or `-- --only scale`): aggregates only
// (per-sandbox series off), and per-sandbox series on for one representative shard of four and of
// twenty (`--shard 0 --total-shards 4|20`; each shard walks every page and keeps its part, the
// others' records dropped at the list). Each is paired with the bare loop over the same pages; RSS
// is read after each of the first four cycles (as is), and after the first two with a forced GC.
import {
  compiledChild,
  type ExporterChild,
  LIFTED_BUDGET,
  type PollFigures,
  pairedCycles,
} from "./exporter-case.js";
import { type BenchChild, forkChild } from "./ipc.js";
import { ScrapeClient, type ScrapeFigures } from "./scrape-client.js";

const PAGE = 100;
/** Measured paired runs at this size (after the two cycles the RSS figures come from). */
const SCALE_RUNS = 3;
const SCRAPES = 20;
type Memory = Record<string, number>;

/** One case at scale. */
export interface ScaleCase {
  label: string;
  flags: string[];
  poll: PollFigures;
  firstCycleMs: number;
  /** RSS (MB) as read, no forced GC, after each of the first four cycles. */
  rssAfterCycles: number[];
  /** RSS and heap (MB) after the first and the second cycle: as is, then after a forced GC. */
  memory: {
    afterCycle1: Memory;
    afterCycle1ForcedGc: Memory;
    afterCycle2: Memory;
    afterCycle2ForcedGc: Memory;
  };
  /** Gzip scrapes of the cached body, no cycle running. */
  gzipScrape: ScrapeFigures;
}

/** Both cases against one simulator of `sandboxes`, with a bare loop beside them. */
export async function scaleCases(
  exporter: ExporterChild,
  sandboxes: number,
): Promise<{ sandboxes: number; simulatorMB: number; cases: ScaleCase[] }> {
  const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", [String(sandboxes)]);
  const bare = await forkChild(
    compiledChild(exporter, "bare-loop-child"),
    [sim.ready.apiUrl],
    exporter.nodeFlags,
  );
  // The ceiling with room to spare: 10,000 pages of 100 are exactly the default.
  const maxPages = String(2 * Math.ceil(sandboxes / PAGE));
  const common = ["--page-limit", String(PAGE), "--max-pages", maxPages, ...LIFTED_BUDGET];
  try {
    await bare.call("run"); // the bare loop's JIT warm-up
    const off = await scaleCase(exporter, sim.ready.apiUrl, bare, "aggregates only", common);
    const shard = (total: number) =>
      scaleCase(exporter, sim.ready.apiUrl, bare, `per-sandbox, shard 0/${total}`, [
        ...common,
        "--per-sandbox-metrics",
        "--max-sandbox-series",
        String(sandboxes),
        "--shard",
        "0",
        "--total-shards",
        String(total),
      ]);
    const four = await shard(4);
    const twenty = await shard(20);
    const simulatorMB = (await sim.call<Memory>("memory")).rss ?? Number.NaN;
    return { sandboxes, simulatorMB, cases: [off, four, twenty] };
  } finally {
    await bare.stop();
    await sim.stop();
  }
}

async function scaleCase(
  exporter: ExporterChild,
  apiUrl: string,
  bare: BenchChild,
  label: string,
  flags: string[],
): Promise<ScaleCase> {
  const child = await forkChild<{ url: string }>(
    exporter.script,
    [apiUrl, ...flags],
    exporter.nodeFlags,
  );
  try {
    const memory = async () => child.call<{ now: Memory; afterGc: Memory }>("memory");
    const first = await child.call<{ ms: number }>("cycle");
    const m1 = await memory();
    await child.call("cycle");
    const m2 = await memory();
    // Cycles 3 and 4: the second cycle is not the steady state (tables sized from the last walk).
    const rssAfterCycles = [m1.now.rss ?? Number.NaN, m2.now.rss ?? Number.NaN];
    for (let i = 0; i < 2; i++) {
      await child.call("cycle");
      rssAfterCycles.push((await memory()).now.rss ?? Number.NaN);
    }
    const client = new ScrapeClient(child.ready.url);
    const gzipScrape = await client.run(SCRAPES, true, 2);
    await client.close();
    // The two cycles above are the exporter's warm-up; the bare loop had its own.
    const poll = await pairedCycles(child, bare, 0, SCALE_RUNS);
    return {
      label,
      flags,
      poll: { ...poll, warmRuns: 2 },
      firstCycleMs: first.ms,
      rssAfterCycles,
      memory: {
        afterCycle1: m1.now,
        afterCycle1ForcedGc: m1.afterGc,
        afterCycle2: m2.now,
        afterCycle2ForcedGc: m2.afterGc,
      },
      gzipScrape,
    };
  } finally {
    await child.stop();
  }
}
