// One benchmark case, run from the parent: the exporter in its own child process polls the
// simulator (another process) while the bare undici loop runs in a third; the parent scrapes.

import { execFileSync } from "node:child_process";
import { copyFileSync } from "node:fs";
import { imageEnv, imageNodeFlags } from "../tools/dockerfile.js";
import { type BenchChild, forkChild } from "./ipc.js";
import { median, ScrapeClient, type ScrapeFigures } from "./scrape-client.js";

const PAGE = 100;
const BUILD_DIR = ".tmp/bench-build";
/**
 * The request budget (platform.maxRequestsPerSecond, default 50/s) lifted out of the way: the
 * bench measures what the exporter costs per page, not the budget. At the default a walk of 1,000
 * pages takes at least 20 s whatever the exporter does. The limiter itself stays in the path.
 */
export const LIFTED_BUDGET = ["--max-requests-per-second", "100000", "--request-burst", "10000"];

/** The exporter child to fork: its compiled script and the node flags it runs with. */
export interface ExporterChild {
  script: string;
  nodeFlags: string[];
}

/**
 * Compiles the measured children (the exporter, the bare loop, the render comparison) and the src/
 * they import to plain JS, so each runs on node alone as the exporter does in production (tsx's
 * loader alone adds tens of MB of RSS and its own start-up work). All run with the node flags of
 * the image's ENTRYPOINT (BENCH_NODE_FLAGS, space-separated, overrides them) and, as does every
 * process forked after this call (the simulator too), in the environment of the image's ENV lines.
 */
export function buildExporterChild(): ExporterChild {
  execFileSync("node_modules/.bin/tsc", ["-p", "bench/tsconfig.child.json"], { stdio: "inherit" });
  // src/version.ts reads ../package.json; the copy also marks the build as ESM.
  copyFileSync("package.json", `${BUILD_DIR}/package.json`);
  Object.assign(process.env, imageEnv());
  const override = process.env.BENCH_NODE_FLAGS;
  const nodeFlags =
    override === undefined ? imageNodeFlags() : override.split(" ").filter((f) => f !== "");
  return { script: `${BUILD_DIR}/bench/exporter-child.js`, nodeFlags };
}

/** A compiled sibling of the exporter child (`bare-loop-child`, `render-child`). */
export function compiledChild(exporter: ExporterChild, name: string): string {
  return exporter.script.replace(/exporter-child\.js$/, `${name}.js`);
}

/** Cycles of each path before measuring (JIT warm-up), then cycles measured (medians of these). */
export const WARM_CYCLES = 2;
export const MEASURED_CYCLES = 7;

type Memory = Record<string, number>;
interface Cycle {
  ms: number;
  cpuMs: number;
  walkMs: number;
  sandboxes: number;
  pages: number;
}

/** Everything one case measured. */
export interface CaseFigures extends PollFigures {
  perSandbox: "off" | "on";
  scrape: ScrapeFigures;
  gzip: ScrapeFigures;
  /**
   * The exporter child's memory (MB): started; after the cycles (WARM_CYCLES + MEASURED_CYCLES),
   * as is and then after a forced full GC; after the scrapes, as is and after a forced GC.
   */
  memory: {
    start: Memory;
    afterCycles: Memory;
    afterCyclesForcedGc: Memory;
    afterScrapes: Memory;
    afterScrapesForcedGc: Memory;
  };
}

/** Paired poll-cycle figures (medians): the exporter's and, when a bare loop ran beside it, the loop's. */
export interface PollFigures {
  sandboxes: number;
  pages: number;
  /** Measured cycles (and bare runs) the medians are of, after `warmRuns` unmeasured ones each. */
  runs: number;
  warmRuns: number;
  cycleMs: number;
  walkMs: number;
  /** The exporter process's CPU time (user + system) in one cycle. */
  cycleCpuMs: number;
  bareLoopMs: number | undefined;
  bareLoopCpuMs: number | undefined;
}

/** Warms both paths, then alternates bare runs and cycles and keeps the medians. */
export async function pairedCycles(
  child: BenchChild,
  bare: BenchChild | undefined,
  warm = WARM_CYCLES,
  measured = MEASURED_CYCLES,
): Promise<PollFigures> {
  for (let i = 0; i < warm; i++) {
    await bare?.call("run");
    await child.call("cycle");
  }
  const bareRuns: { ms: number; cpuMs: number }[] = [];
  const cycles: Cycle[] = [];
  for (let i = 0; i < measured; i++) {
    if (bare) bareRuns.push(await bare.call<{ ms: number; cpuMs: number }>("run"));
    cycles.push(await child.call<Cycle>("cycle"));
  }
  const last = cycles[cycles.length - 1];
  return {
    sandboxes: last?.sandboxes ?? 0,
    pages: last?.pages ?? 0,
    runs: measured,
    warmRuns: warm,
    cycleMs: median(cycles.map((c) => c.ms)),
    walkMs: median(cycles.map((c) => c.walkMs)),
    cycleCpuMs: median(cycles.map((c) => c.cpuMs)),
    bareLoopMs: bare ? median(bareRuns.map((r) => r.ms)) : undefined,
    bareLoopCpuMs: bare ? median(bareRuns.map((r) => r.cpuMs)) : undefined,
  };
}

/** Poll cycles only (per-sandbox series off), alternated with `bare` runs over the same pages. */
export async function pollCase(
  exporter: ExporterChild,
  apiUrl: string,
  bare: BenchChild,
): Promise<PollFigures> {
  const child = await forkChild(
    exporter.script,
    [apiUrl, "--page-limit", String(PAGE), ...LIFTED_BUDGET],
    exporter.nodeFlags,
  );
  try {
    return await pairedCycles(child, bare);
  } finally {
    await child.stop();
  }
}

/** Runs one case of the `exporter` child against the simulator at `apiUrl`; alternates cycles with `bare` runs if given. */
export async function exporterCase(
  exporter: ExporterChild,
  apiUrl: string,
  perSandbox: "off" | "on",
  scrapes: number,
  bare: BenchChild | undefined,
  inspect?: (child: BenchChild) => Promise<void>,
): Promise<CaseFigures> {
  const child = await forkChild<{ url: string; startMemoryMB: Memory }>(
    exporter.script,
    [
      apiUrl,
      "--page-limit",
      String(PAGE),
      ...LIFTED_BUDGET,
      ...(perSandbox === "on" ? ["--per-sandbox-metrics", "--max-sandbox-series", "200000"] : []),
    ],
    exporter.nodeFlags,
  );
  try {
    const poll = await pairedCycles(child, bare);
    const afterCycle = await child.call<{ now: Memory; afterGc: Memory }>("memory");
    const client = new ScrapeClient(child.ready.url);
    const scrape = await client.run(scrapes, false);
    // The same with Accept-Encoding: gzip, as Prometheus scrapes.
    const gzip = await client.run(scrapes, true);
    await client.close();
    const afterScrapes = await child.call<{ now: Memory; afterGc: Memory }>("memory");
    await inspect?.(child);
    return {
      perSandbox,
      ...poll,
      scrape,
      gzip,
      memory: {
        start: child.ready.startMemoryMB,
        afterCycles: afterCycle.now,
        afterCyclesForcedGc: afterCycle.afterGc,
        afterScrapes: afterScrapes.now,
        afterScrapesForcedGc: afterScrapes.afterGc,
      },
    };
  } finally {
    await child.stop();
  }
}
