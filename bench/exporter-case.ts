// One benchmark case, run from the parent: the exporter in its own child process polls the
// simulator (another process) while the bare undici loop runs in a third; the parent scrapes.

import { execFileSync } from "node:child_process";
import { copyFileSync } from "node:fs";
import { type BenchChild, forkChild } from "./ipc.js";
import { median, ScrapeClient, type ScrapeFigures } from "./scrape-client.js";

const PAGE = 100;
const BUILD_DIR = ".tmp/bench-build";

/**
 * Compiles the exporter child (and the src/ it imports) to plain JS, so the process measured runs
 * on node alone as in production; tsx's loader alone adds tens of MB of RSS. Returns its path.
 */
export function buildExporterChild(): string {
  execFileSync("node_modules/.bin/tsc", ["-p", "bench/tsconfig.child.json"], { stdio: "inherit" });
  // src/version.ts reads ../package.json; the copy also marks the build as ESM.
  copyFileSync("package.json", `${BUILD_DIR}/package.json`);
  return `${BUILD_DIR}/bench/exporter-child.js`;
}
const MEASURED_CYCLES = 3;

type Memory = Record<string, number>;
interface Cycle {
  ms: number;
  walkMs: number;
  sandboxes: number;
  pages: number;
}

/** Everything one case measured. */
export interface CaseFigures {
  perSandbox: "off" | "on";
  sandboxes: number;
  pages: number;
  cycleMs: number;
  walkMs: number;
  /** Median bare loop ms, when a bare-loop child was given. */
  bareLoopMs: number | undefined;
  scrape: ScrapeFigures;
  gzip: ScrapeFigures;
  /** The exporter child's memory (MB): started, after a cycle (as is, after GC), after scrapes. */
  memory: { start: Memory; afterCycle: Memory; afterCycleGc: Memory; afterScrapesGc: Memory };
}

/** Runs one case of the exporter child `script` against the simulator at `apiUrl`; alternates cycles with `bare` runs if given. */
export async function exporterCase(
  script: string,
  apiUrl: string,
  perSandbox: "off" | "on",
  scrapes: number,
  bare: BenchChild | undefined,
  inspect?: (child: BenchChild) => Promise<void>,
): Promise<CaseFigures> {
  const child = await forkChild<{ url: string; startMemoryMB: Memory }>(script, [
    apiUrl,
    "--page-limit",
    String(PAGE),
    ...(perSandbox === "on" ? ["--per-sandbox-metrics", "--max-sandbox-series", "200000"] : []),
  ]);
  try {
    // Warm both paths once, then measure each a few times, alternating, and keep the medians.
    await bare?.call("run");
    await child.call("cycle");
    const bareMs: number[] = [];
    const cycles: Cycle[] = [];
    for (let i = 0; i < MEASURED_CYCLES; i++) {
      if (bare) bareMs.push((await bare.call<{ ms: number }>("run")).ms);
      cycles.push(await child.call<Cycle>("cycle"));
    }
    const afterCycle = await child.call<{ now: Memory; afterGc: Memory }>("memory");
    const client = new ScrapeClient(child.ready.url);
    const scrape = await client.run(scrapes, false);
    // The same with Accept-Encoding: gzip, as Prometheus scrapes.
    const gzip = await client.run(scrapes, true);
    await client.close();
    const afterScrapes = await child.call<{ now: Memory; afterGc: Memory }>("memory");
    await inspect?.(child);
    const last = cycles[cycles.length - 1];
    return {
      perSandbox,
      sandboxes: last?.sandboxes ?? 0,
      pages: last?.pages ?? 0,
      cycleMs: median(cycles.map((c) => c.ms)),
      walkMs: median(cycles.map((c) => c.walkMs)),
      bareLoopMs: bare ? median(bareMs) : undefined,
      scrape,
      gzip,
      memory: {
        start: child.ready.startMemoryMB,
        afterCycle: afterCycle.now,
        afterCycleGc: afterCycle.afterGc,
        afterScrapesGc: afterScrapes.afterGc,
      },
    };
  } finally {
    await child.stop();
  }
}
