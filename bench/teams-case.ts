// Several teams at the same total of sandboxes (issue #39; `npm run bench -- --only teams`): one
// team of 100,000 against 10 teams of 10,000 and 1,000 teams of 100. Each layout has its own
// simulator (in this process, E2B mode, one API key per team) and its own exporter child (compiled,
// the image's node flags, platform.teams in a config file with one key file per team), the same
// collectors on and the request budget lifted. Cycles run in turn across the layouts, so what else
// the machine does falls on all of them alike. One team in platform.teams is the single-team
// exporter (no team label), which is the baseline. BENCH_TEAMS_CYCLES sets the measured cycles (5).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { derivedTeams, type Simulator, startSimulator } from "../src/simulator/index.js";
import { samples } from "../tools/exposition.js";
import { type ExporterChild, LIFTED_BUDGET } from "./exporter-case.js";
import { type BenchChild, forkChild } from "./ipc.js";
import {
  median,
  PROMETHEUS_ACCEPT,
  percentiles,
  ScrapeClient,
  type ScrapeFigures,
} from "./scrape-client.js";

/** Teams of each layout; every layout splits the same total evenly. The first is the baseline. */
const LAYOUTS = [1, 10, 1_000] as const;
const WARM_CYCLES = 2;
const MEASURED_CYCLES = Number(process.env.BENCH_TEAMS_CYCLES ?? 5);
const SCRAPES = 10;
const SEED = 39;
const ADMIN_TOKEN = "bench-teams-admin-token";
/** What each team reads besides its walk and templates: the team-scoped collectors of #39. */
const POLL_SECTION = "poll:\n  events: true\n  storage: true\n  teamMetrics: true\n";
const NS = "sandbox";
/** The goal: a layout's cycle at most this many times the single team's. */
const TEAMS_TARGET = 1.3;

type Memory = Record<string, number>;

/** One layout while it runs: its simulator, its exporter child and a scraper of it. */
interface Running {
  readonly teams: number;
  readonly perTeam: number;
  readonly sim: Simulator;
  readonly child: BenchChild<{ url: string }>;
  readonly scraper: ScrapeClient;
  readonly cycles: CycleFigures[];
}

/** One runCycle of a layout's exporter. */
export interface CycleFigures {
  /** Wall and CPU (user + system of the exporter's process) around runCycle. */
  ms: number;
  cpuMs: number;
  /** Requests the simulator answered during the cycle, every team's and the cluster's. */
  requests: number;
  /** The first scrape after the cycle, as Prometheus 2.42 scrapes (its Accept header, gzip). */
  firstScrapeMs: number;
  firstScrapeBytes: number;
}

/** Everything measured of one layout. */
export interface LayoutFigures {
  teams: number;
  perTeam: number;
  pid: number;
  /** Sum of sandbox_sandboxes after the cycles: what the walks found. */
  sandboxesSeen: number;
  warm: CycleFigures[];
  measured: CycleFigures[];
  cycleMs: { median: number; max: number };
  cycleCpuMs: { median: number; max: number };
  /** Mean too: team metrics' maxima (two requests a team) are read once a minute, not every cycle. */
  requestsPerCycle: { median: number; mean: number; min: number; max: number };
  /** The same from the exporter's side: sandbox_exporter_api_request_duration_seconds_count. */
  exporterRequestsPerCycle: number;
  /** Requests of the last measured cycle by route, every team's together. */
  lastCycleRoutes: Record<string, number>;
  firstScrapeMs: { median: number; max: number };
  /** After the cycles, no cycle running: the cached body, plain text and as Prometheus. */
  scrapePlain: ScrapeFigures;
  scrapePrometheus: ScrapeFigures;
  /** The exporter's event-loop delay while the cached scrapes above ran (10 ms resolution). */
  loopDelayDuringScrapes: { p50Ms: number; p99Ms: number; maxMs: number };
  series: number;
  /** sandbox_exporter_api_errors_total above 0 after the cycles, warm-up included, by endpoint and reason. */
  apiErrors: Record<string, number>;
  memory: { afterCycles: Memory; afterCyclesForcedGc: Memory; afterScrapes: Memory };
  /** collect_stale series in the body (every team's collectors, and the cluster's), and those at 1. */
  stale: {
    seen: number;
    series: number;
    teams: number;
    failedSeries: number;
    examples: string[];
  };
  /** Median cycle (and CPU) over the single team's; undefined for the baseline itself. */
  ratio?: number;
  cpuRatio?: number;
}

/** Key files and the config file of a layout: platform.teams lists every team with its key. */
function writeConfig(dir: string, teams: readonly { id: string; apiKey: string }[]): string {
  const label = `teams-${teams.length}`;
  const entries = teams.map((t, i) => {
    const key = join(dir, `${label}-${i}.key`);
    writeFileSync(key, `${t.apiKey}\n`, { mode: 0o600 });
    return `    - {id: ${t.id}, apiKeyFile: ${key}}`;
  });
  const admin = join(dir, "admin");
  writeFileSync(admin, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  const file = join(dir, `${label}.yaml`);
  const platform = `platform:\n  flavor: e2b\n  adminTokenFile: ${admin}\n  teams:\n`;
  writeFileSync(file, `${platform}${entries.join("\n")}\n${POLL_SECTION}`);
  return file;
}

async function startLayout(
  exporter: ExporterChild,
  dir: string,
  teams: number,
  total: number,
): Promise<Running> {
  const perTeam = Math.floor(total / teams);
  const list = derivedTeams(teams, SEED).map((t) => ({ ...t, sandboxes: perTeam }));
  const sim = await startSimulator({ teams: list, adminToken: ADMIN_TOKEN, seed: SEED });
  try {
    const file = writeConfig(dir, list);
    const child = await forkChild<{ url: string }>(
      exporter.script,
      [sim.apiUrl, "--config", file, ...LIFTED_BUDGET],
      exporter.nodeFlags,
    );
    return { teams, perTeam, sim, child, scraper: new ScrapeClient(child.ready.url), cycles: [] };
  } catch (err) {
    await sim.close();
    throw err;
  }
}

/** Every team's requests so far, by route (the cluster's routes are counted by the first team). */
function routesOf(sim: Simulator): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of sim.teams)
    for (const [route, n] of Object.entries(t.counters.snapshot()))
      out.set(route, (out.get(route) ?? 0) + n);
  return out;
}

const sum = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

/** One cycle of `r`, its requests counted by the simulator, then one scrape as Prometheus's. */
async function cycle(r: Running): Promise<{ figures: CycleFigures; routes: Map<string, number> }> {
  const before = routesOf(r.sim);
  const c = await r.child.call<{ ms: number; cpuMs: number }>("cycle");
  const after = routesOf(r.sim);
  const routes = new Map([...after].map(([k, n]) => [k, n - (before.get(k) ?? 0)]));
  const first = await r.scraper.get({ gzip: true, accept: PROMETHEUS_ACCEPT });
  return {
    figures: {
      ms: c.ms,
      cpuMs: c.cpuMs,
      requests: sum(after) - sum(before),
      firstScrapeMs: first.ms,
      firstScrapeBytes: first.bytes,
    },
    routes,
  };
}

/** What a plain scrape's text tells: requests made so far, sandboxes walked, what is stale. */
function readBody(text: string) {
  const m = samples(text);
  let requests = 0;
  let sandboxes = 0;
  let seen = 0;
  const errors: Record<string, number> = {};
  const stale: string[] = [];
  const failed: string[] = [];
  for (const [k, v] of m) {
    if (k.startsWith(`${NS}_exporter_api_request_duration_seconds_count`)) requests += v;
    else if (k.startsWith(`${NS}_sandboxes{`)) sandboxes += v;
    else if (k.startsWith(`${NS}_exporter_collect_stale{`)) {
      seen++;
      if (v === 1) stale.push(k);
    } else if (k.startsWith(`${NS}_exporter_collect_success{`) && v === 0) failed.push(k);
    else if (k.startsWith(`${NS}_exporter_api_errors_total{`) && v > 0) {
      // Every team's together, by endpoint and reason.
      const what = `${/endpoint="([^"]*)"/.exec(k)?.[1]} ${/reason="([^"]*)"/.exec(k)?.[1]}`;
      errors[what] = (errors[what] ?? 0) + v;
    }
  }
  const teams = new Set(stale.map((k) => /team="([^"]+)"/.exec(k)?.[1] ?? "(exporter)"));
  return {
    requests,
    sandboxes,
    series: m.size,
    errors,
    stale: {
      seen,
      series: stale.length,
      teams: teams.size,
      failedSeries: failed.length,
      examples: [...stale, ...failed].slice(0, 6),
    },
  };
}

const spread = (xs: number[]) => ({ median: median(xs), max: Math.max(...xs) });

/** The figures of `r` once its cycles ran: memory, scrapes of the cached body, what is stale. */
async function finish(
  r: Running,
  warmRequests: number,
  lastRoutes: Map<string, number>,
): Promise<LayoutFigures> {
  const memory = await r.child.call<{ now: Memory; afterGc: Memory }>("memory");
  const body = readBody(await r.scraper.text());
  await r.child.call("loopDelayStart");
  const scrapePlain = await r.scraper.run(SCRAPES, false, 2);
  const prom = [];
  for (let i = 0; i < SCRAPES; i++)
    prom.push(await r.scraper.get({ gzip: true, accept: PROMETHEUS_ACCEPT }));
  const loopDelay = await r.child.call<{ p50Ms: number; p99Ms: number; maxMs: number }>(
    "loopDelayStop",
  );
  const afterScrapes = await r.child.call<{ now: Memory }>("memory");
  const warm = r.cycles.slice(0, WARM_CYCLES);
  const measured = r.cycles.slice(WARM_CYCLES);
  const requests = measured.map((c) => c.requests);
  return {
    teams: r.teams,
    perTeam: r.perTeam,
    pid: r.child.pid,
    sandboxesSeen: body.sandboxes,
    warm,
    measured,
    cycleMs: spread(measured.map((c) => c.ms)),
    cycleCpuMs: spread(measured.map((c) => c.cpuMs)),
    requestsPerCycle: {
      median: median(requests),
      mean: requests.reduce((a, b) => a + b, 0) / requests.length,
      min: Math.min(...requests),
      max: Math.max(...requests),
    },
    exporterRequestsPerCycle: (body.requests - warmRequests) / measured.length,
    lastCycleRoutes: Object.fromEntries(lastRoutes),
    firstScrapeMs: spread(measured.map((c) => c.firstScrapeMs)),
    scrapePlain,
    scrapePrometheus: { ...percentiles(prom.map((s) => s.ms)), bytes: prom.at(-1)?.bytes ?? 0 },
    loopDelayDuringScrapes: loopDelay,
    series: body.series,
    apiErrors: body.errors,
    memory: {
      afterCycles: memory.now,
      afterCyclesForcedGc: memory.afterGc,
      afterScrapes: afterScrapes.now,
    },
    stale: body.stale,
  };
}

/** Runs every layout against `total` sandboxes: cycles in turn, then each layout's figures. */
export async function teamsCase(exporter: ExporterChild, total: number) {
  const dir = mkdtempSync(join(tmpdir(), "bench-teams-"));
  const running: Running[] = [];
  const t0 = performance.now();
  try {
    for (const teams of LAYOUTS) running.push(await startLayout(exporter, dir, teams, total));
    const startSeconds = (performance.now() - t0) / 1000;
    const warmRequests = new Map<Running, number>();
    const lastRoutes = new Map<Running, Map<string, number>>();
    for (let round = 0; round < WARM_CYCLES + MEASURED_CYCLES; round++) {
      if (round === WARM_CYCLES)
        for (const r of running) warmRequests.set(r, readBody(await r.scraper.text()).requests);
      // A layout goes first in one round and last in another: the order's own effect is shared.
      const order = running.map((_, i) => running[(i + round) % running.length] as Running);
      for (const r of order) {
        const c = await cycle(r);
        r.cycles.push(c.figures);
        lastRoutes.set(r, c.routes);
      }
    }
    const layouts: LayoutFigures[] = [];
    for (const r of running)
      layouts.push(await finish(r, warmRequests.get(r) ?? 0, lastRoutes.get(r) ?? new Map()));
    const base = layouts[0];
    for (const l of layouts.slice(1)) {
      l.ratio = l.cycleMs.median / (base?.cycleMs.median ?? Number.NaN);
      l.cpuRatio = l.cycleCpuMs.median / (base?.cycleCpuMs.median ?? Number.NaN);
    }
    const benchRssMB = process.memoryUsage().rss / 2 ** 20;
    return {
      total,
      warmCycles: WARM_CYCLES,
      measuredCycles: MEASURED_CYCLES,
      startSeconds,
      benchProcessRssMB: benchRssMB,
      nodeFlags: { exporterChild: ["--expose-gc", ...exporter.nodeFlags], bench: process.execArgv },
      layouts,
      target: `cycle <= ${TEAMS_TARGET}x the single team's, nothing stale`,
      measured: `one simulator per layout in the bench process (E2B mode, teams with their own API keys, seed ${SEED}), one exporter child per layout compiled with the image's node flags, config file with platform.teams (one key file each; 1 team: the single-team exporter), ${POLL_SECTION.trim().replace(/\n\s*/g, " ")}, templates on, budget lifted (${LIFTED_BUDGET.join(" ")}), poll schedule 15s (default); ${WARM_CYCLES} warm-up then ${MEASURED_CYCLES} measured runCycle per layout, layouts in turn (rotating order); requests counted by the simulator's per-team counters; after each cycle one scrape as Prometheus 2.42 (Accept header, gzip); after the cycles: memory as is and after a forced GC, ${SCRAPES} plain and ${SCRAPES} Prometheus-style scrapes of the cached body with the child's event-loop delay monitored (10 ms resolution); stale: sandbox_exporter_collect_stale == 1 in a plain scrape after the cycles`,
    };
  } finally {
    for (const r of running) {
      await r.scraper.close();
      await r.child.stop();
      await r.sim.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
export type TeamsFigures = Awaited<ReturnType<typeof teamsCase>>;

const cell = (v: number | string | undefined, w = 10) =>
  (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(1)) : (v ?? "")).padStart(
    w,
  );

/** The printed table of the teams case: one column per layout. */
export function printTeams(t: TeamsFigures): void {
  console.log(
    `\n${t.total} sandboxes split over 1, 10 and 1,000 teams; ${t.warmCycles} warm-up + ${t.measuredCycles} measured cycles each, in turn\n`,
  );
  const head = t.layouts.map((l) => `${l.teams} x ${l.perTeam}`);
  console.log(`${"".padEnd(40)}${head.map((h) => cell(h, 14)).join("")}`);
  const row = (label: string, f: (l: LayoutFigures) => number | string | undefined) =>
    console.log(`${label.padEnd(40)}${t.layouts.map((l) => cell(f(l), 14)).join("")}`);
  row("sandboxes walked", (l) => l.sandboxesSeen);
  row("requests a cycle, median (simulator)", (l) => l.requestsPerCycle.median);
  row("requests a cycle, mean (simulator)", (l) => l.requestsPerCycle.mean);
  row("requests a cycle, mean (exporter's count)", (l) => l.exporterRequestsPerCycle);
  row("cycle ms, median", (l) => l.cycleMs.median);
  row("cycle ms, max", (l) => l.cycleMs.max);
  row("cycle vs one team", (l) => (l.ratio === undefined ? "1" : l.ratio.toFixed(2)));
  row("cycle CPU ms, median", (l) => l.cycleCpuMs.median);
  row("cycle CPU ms, max", (l) => l.cycleCpuMs.max);
  row("CPU vs one team", (l) => (l.cpuRatio === undefined ? "1" : l.cpuRatio.toFixed(2)));
  row("first scrape after a cycle ms, median", (l) => l.firstScrapeMs.median);
  row("first scrape after a cycle ms, max", (l) => l.firstScrapeMs.max);
  row("cached scrape, plain p50 ms", (l) => l.scrapePlain.p50Ms);
  row("cached scrape, plain p99 ms", (l) => l.scrapePlain.p99Ms);
  row("body bytes, plain", (l) => l.scrapePlain.bytes);
  row("cached scrape, Prometheus p50 ms", (l) => l.scrapePrometheus.p50Ms);
  row("cached scrape, Prometheus p99 ms", (l) => l.scrapePrometheus.p99Ms);
  row("body bytes, OpenMetrics gzip", (l) => l.scrapePrometheus.bytes);
  row("loop delay during them, p99 ms", (l) => l.loopDelayDuringScrapes.p99Ms);
  row("loop delay during them, max ms", (l) => l.loopDelayDuringScrapes.maxMs);
  row("samples in the body", (l) => l.series);
  row("RSS after cycles MB", (l) => l.memory.afterCycles.rss);
  row("heap used after cycles MB", (l) => l.memory.afterCycles.heapUsed);
  row("RSS after a forced GC MB", (l) => l.memory.afterCyclesForcedGc.rss);
  row("heap used after a forced GC MB", (l) => l.memory.afterCyclesForcedGc.heapUsed);
  row("RSS after the scrapes MB", (l) => l.memory.afterScrapes.rss);
  row("collect_stale series in the body", (l) => l.stale.seen);
  row("of them at 1 (teams)", (l) => `${l.stale.series} (${l.stale.teams})`);
  row("failed collector series", (l) => l.stale.failedSeries);
  row("API errors (warm-up included)", (l) =>
    Object.values(l.apiErrors).reduce((a, b) => a + b, 0),
  );
  for (const l of t.layouts)
    if (l.stale.examples.length > 0)
      console.log(`  ${l.teams} teams, e.g.: ${l.stale.examples.join(", ")}`);
  for (const l of t.layouts)
    if (Object.keys(l.apiErrors).length > 0)
      console.log(`  ${l.teams} teams, API errors: ${JSON.stringify(l.apiErrors)}`);
  for (const l of t.layouts)
    console.log(`  ${l.teams} teams, last cycle's requests: ${JSON.stringify(l.lastCycleRoutes)}`);
  console.log(
    `\nlayouts started in ${t.startSeconds.toFixed(1)} s; bench process (the simulators) RSS ${t.benchProcessRssMB.toFixed(0)} MB`,
  );
}
