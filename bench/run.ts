// `npm run bench`: figures (not pass/fail) into bench/results.json and a printed table.
// Every part runs in its own process: the simulator, the exporter under test, the bare undici
// loop and the render comparison are children; this parent only drives them and scrapes.
// `npm run bench -- --1m` adds the cases at 1,000,000 sandboxes (a few minutes more);
// `npm run bench -- --only policy` (or `--only scale`, the 1,000,000-sandbox cases, `--only
// events`, the lifecycle events cases, `--only retention`, 100,000 snapshots, or `--only teams`,
// 100,000 sandboxes over 1, 10 and 1,000 teams, or `--only profile`, V8 CPU profiles of the poll
// cycle and the scrapes with their top frames) runs those cases alone (figures to .tmp/bench/).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { costCase } from "./cost-case.js";
import { demoStartup } from "./demo-case.js";
import { eventsCase } from "./events-case.js";
import {
  buildExporterChild,
  compiledChild,
  exporterCase,
  MEASURED_CYCLES,
  pollCase,
  WARM_CYCLES,
} from "./exporter-case.js";
import { forkChild } from "./ipc.js";
import { latencyCase, latencyOptions } from "./latency-case.js";
import { policyCost } from "./policy-case.js";
import { MOSTLY_IDLE, policyFleet, printFleetRuns } from "./policy-fleet-case.js";
import { probeTiming } from "./probe-case.js";
import { printProfiles, profileCases } from "./profile-case.js";
import { renderComparison } from "./render-case.js";
import { printEvents, printMachine, printPolicy, printScale, printTable } from "./report.js";
import { printRetention, retentionCase } from "./retention.js";
import { scaleCases } from "./scale-case.js";
import { printTeams, teamsCase } from "./teams-case.js";

const SANDBOXES = Number(process.env.BENCH_SANDBOXES ?? 100_000);
const PROBE_RUNS = Number(process.env.BENCH_PROBE_RUNS ?? 20);
const SCRAPES = 100;
const SCALE_SANDBOXES = Number(process.env.BENCH_SCALE_SANDBOXES ?? 1_000_000);
const SNAPSHOTS = Number(process.env.BENCH_SNAPSHOTS ?? 100_000);
const LATENCY = latencyOptions();
const POLICY = {
  cycles: Number(process.env.BENCH_POLICY_CYCLES ?? 10),
  schedule: process.env.BENCH_POLICY_SCHEDULE ?? "15s",
};
/** The mostly-idle fleet of issue 21: its size as the issue measured it. */
const MOSTLY_IDLE_SANDBOXES = Number(process.env.BENCH_MOSTLY_IDLE_SANDBOXES ?? 5_000);
const MOSTLY_IDLE_LABEL = "policy on a mostly idle fleet";
const POLICY_MEASURED = {
  policyCycle:
    "one cold and one warm run; in-process simulator and exporter under tsx; policyMs: the engine's run (log reads, evaluation, dry-run actions); cycleMs: the whole poll cycle including it",
  policyFleet:
    "one start of the exporter on its schedule, counted until the given number of policy runs ended: requests to the policy's routes by the simulator's counters between each run's start and end; lines of the policy's logger in the same window (pino at info); skipped ticks from /metrics; firstActionMs from startExporter to the first dry_run audit line; busy / active acted on: dry_run sandboxes the simulator has at or over cpuBelowPercent / with a log line within idleFor",
};
const EVENTS_MEASURED =
  "one run, in process under tsx (simulator, exporter, delivery client and scraper share one event loop). webhook: E2B flavor, --e2b-webhook-secret-file, poll.events off; deliveries of one signed event each (created and killed in turn, 50 templates, the 8 kill reasons) over an undici Pool of 16 keep-alive connections, 16 in flight; the duplicates are the first deliveries sent again unchanged; a scraper (one connection, Prometheus 2.42's Accept header, gzip) every 100 ms during each run and for 50 scrapes with none, before and after; memory: process.memoryUsage() after 6 forced full GCs (--expose-gc set at run time), before: after the first idle scrapes, just before the deliveries; bytesPerIdRss: RSS delta over the new events / ids remembered (approximate: RSS also holds what the allocator kept of the requests); isolatedLedgerBytesPerId: heap kept by an EventLedger alone per id (its id and kill maps) after the events were dropped. catchUp: simulator events at one every 100 ms of its clock ending now, the exporter's system clock; ticks run back to back with runCycle; requests and ms per tick: the events collector's status";
const withScale = process.argv.includes("--1m");
const onlyAt = process.argv.indexOf("--only");
const only = onlyAt < 0 ? undefined : process.argv[onlyAt + 1];
if (
  only !== undefined &&
  !["policy", "scale", "events", "cost", "retention", "teams", "profile"].includes(only)
)
  throw new Error(
    `--only takes "policy", "scale", "events", "cost", "retention", "teams" or "profile" (the cases that run alone), not ${only}`,
  );
const t0 = performance.now();
// Other work on the machine skews every figure: the load before and after goes into the results.
const loadAtStart = loadavg();

/** The machine and its load, in every results file. */
function machine() {
  const cpu = cpus();
  return {
    cpus: cpu.length,
    model: cpu[0]?.model ?? "",
    memoryGB: totalmem() / 2 ** 30,
    loadAverage1m: { start: loadAtStart[0], end: loadavg()[0] },
  };
}

if (only === "policy") {
  const policy = await policyCost(SANDBOXES);
  const fleet = await policyFleet(SANDBOXES, POLICY);
  const idleFleet = await policyFleet(MOSTLY_IDLE_SANDBOXES, { ...POLICY, mix: MOSTLY_IDLE });
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    sandboxes: SANDBOXES,
    benchSeconds: { policy: (performance.now() - t0) / 1000 },
    policyCycle: { ...policy, runs: 1, measured: POLICY_MEASURED.policyCycle },
    policyFleet: { ...fleet, measured: POLICY_MEASURED.policyFleet },
    policyFleetMostlyIdle: { ...idleFleet, measured: POLICY_MEASURED.policyFleet },
  };
  // Apart from bench/results.json, which holds a whole run.
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(".tmp/bench/results-policy.json", `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nsandbox-exporter bench, policy cases only, ${SANDBOXES} sandboxes`);
  printMachine(results.machine);
  printPolicy(policy, fleet);
  printFleetRuns(MOSTLY_IDLE_LABEL, idleFleet);
  console.log(
    `\nwritten to .tmp/bench/results-policy.json; ${results.benchSeconds.policy.toFixed(0)} s`,
  );
} else if (only === "cost") {
  const cost = await costCase(buildExporterChild(), SANDBOXES);
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(
    ".tmp/bench/results-cost.json",
    `${JSON.stringify({ date: new Date().toISOString(), node: process.version, machine: machine(), cost }, null, 2)}\n`,
  );
  console.log(`\nsandbox-exporter bench, cost accounting, ${SANDBOXES} sandboxes`);
  console.log(JSON.stringify(cost, null, 2));
} else if (only === "scale") {
  const scale = await scaleCases(buildExporterChild(), SCALE_SANDBOXES);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    benchSeconds: { scale: (performance.now() - t0) / 1000 },
    scale,
  };
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(".tmp/bench/results-scale.json", `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nsandbox-exporter bench, scale cases only, ${SCALE_SANDBOXES} sandboxes`);
  printMachine(results.machine);
  printScale(scale);
  console.log(
    `\nwritten to .tmp/bench/results-scale.json; ${results.benchSeconds.scale.toFixed(0)} s`,
  );
} else if (only === "events") {
  const events = await eventsCase();
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    benchSeconds: { events: (performance.now() - t0) / 1000 },
    events: { ...events, measured: EVENTS_MEASURED },
  };
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(".tmp/bench/results-events.json", `${JSON.stringify(results, null, 2)}\n`);
  console.log("\nsandbox-exporter bench, lifecycle events cases only");
  printMachine(results.machine);
  printEvents(events);
  console.log(
    `\nwritten to .tmp/bench/results-events.json; ${results.benchSeconds.events.toFixed(0)} s`,
  );
} else if (only === "retention") {
  const retention = await retentionCase(buildExporterChild(), SNAPSHOTS);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    benchSeconds: { retention: (performance.now() - t0) / 1000 },
    retention,
  };
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(".tmp/bench/results-retention.json", `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nsandbox-exporter bench, retention, ${SNAPSHOTS} snapshots`);
  printMachine(results.machine);
  printRetention(retention);
  console.log(
    `\nwritten to .tmp/bench/results-retention.json; ${results.benchSeconds.retention.toFixed(0)} s`,
  );
} else if (only === "teams") {
  const teams = await teamsCase(buildExporterChild(), SANDBOXES);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    benchSeconds: { teams: (performance.now() - t0) / 1000 },
    teams,
  };
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(".tmp/bench/results-teams.json", `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nsandbox-exporter bench, several teams, ${SANDBOXES} sandboxes`);
  printMachine(results.machine);
  printTeams(teams);
  console.log(
    `\nwritten to .tmp/bench/results-teams.json; ${results.benchSeconds.teams.toFixed(0)} s`,
  );
} else if (only === "profile") {
  const profiles = await profileCases(buildExporterChild(), SANDBOXES);
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    profiles,
  };
  mkdirSync(".tmp/bench", { recursive: true });
  writeFileSync(".tmp/bench/results-profile.json", `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nsandbox-exporter bench, CPU profiles, ${SANDBOXES} sandboxes`);
  printMachine(results.machine);
  printProfiles(profiles);
} else await everything();

/** Every case but the 1M ones unless --1m; figures to bench/results.json. */
async function everything(): Promise<void> {
  const exporterChild = buildExporterChild();
  const bareScript = compiledChild(exporterChild, "bare-loop-child");
  const flags = exporterChild.nodeFlags;
  // The floor under any node process's RSS, for comparison with the exporter child's.
  const idleNodeMB = Number(
    execFileSync(
      process.execPath,
      [...flags, "--expose-gc", "-e", "gc(); console.log(process.memoryUsage().rss / 1048576)"],
      { encoding: "utf8" },
    ).trim(),
  );
  const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", [String(SANDBOXES)]);
  const bare = await forkChild<{ idleMemoryMB: Record<string, number> }>(
    bareScript,
    [sim.ready.apiUrl],
    flags,
  );
  let off: Awaited<ReturnType<typeof exporterCase>>;
  let on: Awaited<ReturnType<typeof exporterCase>>;
  let latency: Awaited<ReturnType<typeof latencyCase>>;
  let simMemory: Record<string, number>;
  try {
    off = await exporterCase(exporterChild, sim.ready.apiUrl, "off", SCRAPES, bare);
    on = await exporterCase(exporterChild, sim.ready.apiUrl, "on", SCRAPES, undefined);
    latency = await latencyCase(exporterChild, sim.ready.apiUrl, LATENCY);
    simMemory = await sim.call("memory");
  } finally {
    await bare.stop();
    await sim.stop();
  }
  // The same fleet paged newest first, as E2B pages it: the exporter then sorts each walk.
  const simByStart = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", [
    String(SANDBOXES),
    "started",
  ]);
  const bareByStart = await forkChild(bareScript, [simByStart.ready.apiUrl], flags);
  let byStart: Awaited<ReturnType<typeof pollCase>>;
  try {
    byStart = await pollCase(exporterChild, simByStart.ready.apiUrl, bareByStart);
  } finally {
    await bareByStart.stop();
    await simByStart.stop();
  }
  const render = renderComparison(exporterChild, SANDBOXES);
  const probe = await probeTiming(exporterChild, PROBE_RUNS);
  const policy = await policyCost(SANDBOXES);
  const fleet = await policyFleet(SANDBOXES, POLICY);
  const idleFleet = await policyFleet(MOSTLY_IDLE_SANDBOXES, { ...POLICY, mix: MOSTLY_IDLE });
  const demo = await demoStartup();
  const events = await eventsCase();
  const defaultSeconds = (performance.now() - t0) / 1000;
  const scale = withScale ? await scaleCases(exporterChild, SCALE_SANDBOXES) : undefined;
  const scaleSeconds = (performance.now() - t0) / 1000 - defaultSeconds;

  const pollRuns = `median of ${MEASURED_CYCLES} paired runs after ${WARM_CYCLES} warm-up runs each`;
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    machine: machine(),
    sandboxes: SANDBOXES,
    benchSeconds: { default: defaultSeconds, ...(withScale ? { scale1M: scaleSeconds } : {}) },
    isolation: `exporter, bare loop and render comparison compiled to JS on plain node with the node flags of the image's ENTRYPOINT (${flags.join(" ") || "none"}), each in its own child process; simulator under tsx in another; scrape client in the parent`,
    pollCycle: {
      cycleMs: off.cycleMs,
      walkMs: off.walkMs,
      cycleCpuMs: off.cycleCpuMs,
      bareUndiciLoopMs: off.bareLoopMs,
      bareUndiciLoopCpuMs: off.bareLoopCpuMs,
      ratio: off.cycleMs / (off.bareLoopMs ?? Number.NaN),
      runs: off.runs,
      statistic: pollRuns,
      target: "<= 1.3",
    },
    pollCycleNewestFirst: {
      cycleMs: byStart.cycleMs,
      bareUndiciLoopMs: byStart.bareLoopMs,
      ratio: byStart.cycleMs / (byStart.bareLoopMs ?? Number.NaN),
      cycleCpuMs: byStart.cycleCpuMs,
      bareUndiciLoopCpuMs: byStart.bareLoopCpuMs,
      runs: byStart.runs,
      statistic: pollRuns,
      order: "start time, newest first, then id (E2B's order)",
    },
    pollCycleOn: { cycleMs: on.cycleMs, runs: on.runs, statistic: `median of ${on.runs} cycles` },
    scrapeOff: { ...off.scrape, target: "p99 < 20 ms" },
    scrapeOn: { ...on.scrape, target: "p99 < 100 ms" },
    gzipOff: off.gzip,
    gzipOn: { ...on.gzip, target: "p99 < 100 ms" },
    scrapeMeasured: `${SCRAPES} scrapes back to back after 5 unmeasured, one connection, no cycle running: the cached body`,
    render: {
      ...render,
      renderVsRender: render.promClient.renderMs / render.ours.steadyMs,
      firstVsFirst: (render.promClient.loadMs + render.promClient.renderMs) / render.ours.firstMs,
      cachedScrapeP99VsPromClientRender: render.promClient.renderMs / on.scrape.p99Ms,
      measured: `medians of ${render.runs} after one unmeasured; ours: ExporterMetrics.update of a snapshot of the simulator's fleet, per-sandbox on (aggregates, churn and the five per-sandbox families: info, start, end, cpus, memory), first render by a fresh instance and re-render of a walk with 1 % of sandboxes changed (steadyAsyncMs: the same through updateAsync); prom-client: loadMs resets and sets the same five gauges from the same fleet, renderMs is registry.metrics()`,
      target: "prom-client render / ours >= 5x",
    },
    latencyDuringCycles: {
      ...latency,
      measured: `one run: per-sandbox on, a cycle every ${LATENCY.scheduleMs} ms for ${LATENCY.forMs / 1000} s while the parent scrapes every ${latency.scrapeEveryMs} ms as Prometheus 2.42 (its Accept header, gzip, one connection); duringCycles: scrapes overlapping a cycle from its start until its body and gzip were cached; idle: ${LATENCY.idleMs / 1000} s of the same scrapes with no cycle; loop delay: the exporter's own event-loop monitor`,
      target: "p99 < 50 ms during cycles",
    },
    rss: {
      offAfterCyclesMB: off.memory.afterCycles.rss,
      onAfterCyclesMB: on.memory.afterCycles.rss,
      offAfterCyclesForcedGcMB: off.memory.afterCyclesForcedGc.rss,
      onAfterCyclesForcedGcMB: on.memory.afterCyclesForcedGc.rss,
      offAfterScrapesMB: off.memory.afterScrapes.rss,
      onAfterScrapesMB: on.memory.afterScrapes.rss,
      offAfterScrapesForcedGcMB: off.memory.afterScrapesForcedGc.rss,
      onAfterScrapesForcedGcMB: on.memory.afterScrapesForcedGc.rss,
      exporterStartedMB: off.memory.start.rss,
      idleNodeMB,
      idleChildMB: bare.ready.idleMemoryMB.rss,
      simulatorMB: simMemory.rss,
      measured: `the exporter child's process.memoryUsage().rss, one reading each: after its ${WARM_CYCLES + MEASURED_CYCLES} cycles as is, then after a forced full GC (global.gc()); after the ${2 * SCRAPES + 10} scrapes, as is and after a forced GC. idleNodeMB: an empty node process; idleChildMB: the idle bare-loop child (compiled, same flags)`,
      target: "off < 150 MB, on < 400 MB",
    },
    memoryMB: { off: off.memory, on: on.memory },
    probeTiming: {
      ...probe,
      compared:
        "start: delayed minus no-delay start; end: (end - first_data) delayed minus no-delay, as the simulator waits endDelayMs after the last output; endTotal: delayed minus no-delay end (both delays); medians of `runs` each",
      target: "|error| <= 2 ms",
    },
    demoStartup: { ...demo, target: "first /metrics answer < 5000 ms" },
    policyCycle: { ...policy, runs: 1, measured: POLICY_MEASURED.policyCycle },
    policyFleet: { ...fleet, measured: POLICY_MEASURED.policyFleet },
    policyFleetMostlyIdle: { ...idleFleet, measured: POLICY_MEASURED.policyFleet },
    events: { ...events, measured: EVENTS_MEASURED },
    ...(scale
      ? {
          scale: {
            ...scale,
            cases: scale.cases.map((c) => ({
              ...c,
              ratio: c.poll.cycleMs / (c.poll.bareLoopMs ?? Number.NaN),
            })),
            measured:
              "one simulator of 1,000,000 sandboxes; per case: two cycles (RSS as is and after a forced GC after each), 20 gzip scrapes, then 3 paired runs with the bare loop (medians)",
          },
        }
      : {}),
  };
  writeFileSync("bench/results.json", `${JSON.stringify(results, null, 2)}\n`);
  printTable(results, {
    off,
    on,
    byStart,
    probe,
    policy,
    policyFleet: fleet,
    demo,
    render,
    latency,
    scale,
    events,
  });
  printFleetRuns(MOSTLY_IDLE_LABEL, idleFleet);
  console.log(
    `\nwritten to bench/results.json; ${defaultSeconds.toFixed(0)} s${withScale ? ` + ${scaleSeconds.toFixed(0)} s for the 1M cases` : ""}`,
  );
}
