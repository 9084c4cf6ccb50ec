// The policy on a large fleet, as the issue that moved it off the poll path asked: 100,000
// sandboxes, of the running ones 50 % idle and 10 % silent-but-busy, 50 ms on every API request,
// one dry-run pause rule over every running sandbox (idle by logs and by CPU), 10 actions a cycle,
// the exporter on its real schedule and the default request budget. A second mix, 90 % idle and
// 10 % silent-but-busy (all quiet by their logs), is the fleet on which the random sample alone
// fills a usage batch (issue 21). Everything is counted from outside the engine: requests by the
// simulator, lines from the log stream, skipped ticks from /metrics, busy or active sandboxes
// acted on from the simulator's own model.
import { pino } from "pino";
import { startExporter } from "../src/app.js";
import { loadConfig } from "../src/catalog.js";
import { applyActivityMix } from "../src/simulator/generate.js";
import { startSimulator } from "../src/simulator/index.js";
import { cpuOf } from "../src/simulator/usage.js";
import { systemClock } from "../src/util/clock.js";
import { tickInterval } from "../src/util/schedule.js";
import { sampleOf, samples } from "../tools/exposition.js";
import { lineSink, type PolicyRunCount, PolicyRunTally } from "../tools/policy-run-tally.js";
import { median } from "./scrape-client.js";

const LATENCY_MS = 50;
/** 100 pages of 100,000: at 50 ms a page, E2B's 100 would make a walk of 50 s, over any tick. */
const PAGE = 1_000;
const IDLE_FOR_MS = 30 * 60_000;
const CPU_BELOW_PERCENT = 2;
const MAX_ACTIONS = 10;
const QUIET = { quietForMs: 2 * 3_600_000, activeAgoMs: 5 * 60_000 };
const RULE = "pause-idle";
/** Rules in the rule file: a run may log actions + notices + rules + 1 lines. */
const RULE_COUNT = 1;
/** Every route the exporter may call; each answers LATENCY_MS late (checked after the run). */
const ROUTES = [
  "GET /health",
  "GET /cluster/overview",
  "GET /nodes",
  "GET /nodes/{id}",
  "GET /templates",
  "GET /templates/{id}",
  "GET /v2/sandboxes",
  "GET /v2/sandboxes/{id}/logs",
  "GET /sandboxes/metrics",
  "GET /sandboxes/{id}/metrics",
  "GET /sandboxes/{id}",
  "POST /sandboxes/{id}/pause",
  "DELETE /sandboxes/{id}",
];
/** The routes only the policy calls (the poll walks during some runs). */
const POLICY_ROUTES = ROUTES.slice(ROUTES.indexOf("GET /v2/sandboxes/{id}/logs"));
/** How the exporter logs a skipped tick (the count comes from /metrics, the times from these). */
const SKIP_LINE = "sandbox walk still running at this tick";

/** The shares of the running sandboxes that are idle and silent-but-busy; the rest are active. */
export interface FleetMix {
  idle: number;
  silentBusy: number;
  /**
   * Over the share the fleet is idle (and the sample's uncertainty), or the blast radius stops
   * every action.
   */
  maxMatchPercent: number;
}

/** Half the fleet idle: the case of the issue that moved the policy off the poll path. */
export const HALF_IDLE: FleetMix = { idle: 0.5, silentBusy: 0.1, maxMatchPercent: 75 };
/** Nine in ten idle, the rest busy by CPU only: the sample is a whole usage batch (issue 21). */
export const MOSTLY_IDLE: FleetMix = { idle: 0.9, silentBusy: 0.1, maxMatchPercent: 100 };

/** The one dry-run pause rule over every running sandbox. */
function rules(maxMatchPercent: number): string {
  return `
dryRun: true
maxActionsPerCycle: ${MAX_ACTIONS}
maxMatchPercent: ${maxMatchPercent}
activity:
  usage: { cpuBelowPercent: ${CPU_BELOW_PERCENT} }
rules:
  - name: ${RULE}
    match: { states: [running] }
    idleFor: ${IDLE_FOR_MS / 60_000}m
    action: pause
`;
}

/** What the large-fleet case measured, and under which conditions. */
export interface PolicyFleet {
  /** Where the parts ran, and with which node flags. */
  isolation: string;
  conditions: {
    sandboxes: number;
    running: number;
    idle: number;
    silentBusy: number;
    active: number;
    latencyMs: number;
    pageLimit: number;
    schedule: string;
    maxRequestsPerSecond: number;
    maxActionsPerCycle: number;
    maxMatchPercent: number;
    rules: string;
  };
  /** Policy runs measured (one per walked snapshot) and the poll cycles they spanned. */
  runs: number;
  pollCycles: number;
  /** Ms of the last sandbox walk. */
  walkMs: number;
  /** Ticks skipped because the walk was still running, from start to the last run's end; when. */
  skippedTicks: number;
  skippedAtMs: number[];
  /** Of those, the ticks skipped after the first walk was published (the first run's start). */
  skippedAfterFirstWalk: number;
  /** Requests to the policy's routes per run: the first run, the median of the others, the max. */
  requestsPerRun: { first: number; medianAfter: number; max: number };
  /** Policy log lines per run (max), and the runs over actions + notices + rules + 1. */
  linesPerRunMax: number;
  runsOverLineBound: number;
  policyLinesOutsideRuns: number;
  auditLines: number;
  /** Exporter start to the first action's audit line; runs' median wall time. */
  firstActionMs: number | undefined;
  runMsMedian: number;
  /** Dry-run actions in all, and on sandboxes the simulator has busy by CPU or active by logs. */
  actions: number;
  busyActedOn: number;
  activeActedOn: number;
  /** Per run, without the ids acted on. */
  perRun: Omit<PolicyRunCount, "acted">[];
}

/**
 * Starts the simulator with the mixed fleet (`mix`, default HALF_IDLE) and the exporter on its
 * schedule (`schedule`, e.g. "15s"), and counts until `cycles` policy runs have ended.
 */
export async function policyFleet(
  sandboxes: number,
  o: { cycles: number; schedule: string; mix?: FleetMix },
): Promise<PolicyFleet> {
  const mix = o.mix ?? HALF_IDLE;
  const ruleFile = rules(mix.maxMatchPercent);
  const sim = await startSimulator({ sandboxes, pageSizeCap: PAGE });
  for (const route of ROUTES) sim.faults.route(route, { latencyMs: LATENCY_MS });
  const { config } = loadConfig({
    argv: [
      "--listen",
      "127.0.0.1:0",
      "--page-limit",
      String(PAGE),
      "--poll-schedule",
      o.schedule,
      "--policy",
      "rules.yaml",
    ],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_DOMAIN: sim.domain },
  });
  const running = new Set(config.states.running);
  const kinds = applyActivityMix(
    sim.state.sandboxes.values(),
    running,
    { idle: mix.idle, silentBusy: mix.silentBusy, ...QUIET },
    Date.now(),
  );
  const count = (k: string) => [...kinds.values()].filter((v) => v === k).length;
  const origin = performance.now();
  const tally = new PolicyRunTally(POLICY_ROUTES, origin);
  const skippedAtMs: number[] = [];
  const logger = pino(
    { level: "info" },
    lineSink((line) => {
      const at = performance.now();
      tally.line(line, at);
      if (typeof line.msg === "string" && line.msg.startsWith(SKIP_LINE))
        skippedAtMs.push(at - origin);
    }),
  );
  const exporter = await startExporter(config, {
    logger,
    clock: systemClock,
    readFile: () => ruleFile,
  });
  try {
    const engine = exporter.policy;
    if (!engine || engine.lastRun) throw new Error("no policy engine, or it ran before the bench");
    const done = new Promise<void>((resolve) => {
      // The runs' edges are all the bench takes from the engine; the counts come from outside.
      const run = engine.run.bind(engine);
      engine.run = async (snapshot) => {
        tally.start(sim.counters.snapshot(), performance.now());
        try {
          return await run(snapshot);
        } finally {
          tally.end(sim.counters.snapshot(), performance.now());
          if (tally.runs.length === o.cycles) resolve();
        }
      };
    });
    const limitMs = o.cycles * tickInterval(config.poll.schedule) * 3 + 120_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${tally.runs.length} of ${o.cycles} policy runs in ${limitMs} ms`)),
        limitMs,
      );
    });
    await Promise.race([done, late]).finally(() => clearTimeout(timer));
    const m = samples(await (await fetch(`${exporter.server.url}/metrics`)).text());
    const latest = exporter.poller.latest;
    const unslowed = Object.keys(sim.counters.snapshot()).filter((r) => !ROUTES.includes(r));
    if (unslowed.length > 0) throw new Error(`served without latency: ${unslowed.join(", ")}`);
    const acted = tally.runs.flatMap((r) => r.acted);
    const busy = acted.filter((id) => {
      const s = sim.state.sandbox(id);
      return s !== undefined && cpuOf(s) >= CPU_BELOW_PERCENT;
    });
    const active = acted.filter((id) => {
      const newest = sim.state.sandbox(id)?.logs.at(-1)?.timestamp ?? 0;
      return Date.now() - newest < IDLE_FOR_MS;
    });
    const requests = tally.runs.map((r) => r.requestsTotal);
    const flags = nodeFlags();
    return {
      isolation: `simulator and exporter in the bench's own process under tsx, node flags: ${flags.join(" ") || "none"}`,
      conditions: {
        sandboxes,
        running: kinds.size,
        idle: count("idle"),
        silentBusy: count("silent_busy"),
        active: count("active"),
        latencyMs: LATENCY_MS,
        pageLimit: PAGE,
        schedule: o.schedule,
        maxRequestsPerSecond: config.platform.maxRequestsPerSecond,
        maxActionsPerCycle: MAX_ACTIONS,
        maxMatchPercent: mix.maxMatchPercent,
        rules: ruleFile.trim(),
      },
      runs: tally.runs.length,
      pollCycles: latest?.cycle ?? 0,
      walkMs: latest ? latest.collectors.sandboxes.durationMs : Number.NaN,
      skippedTicks: sampleOf(m, "sandbox_exporter_poll_skipped_ticks_total") ?? Number.NaN,
      skippedAtMs,
      skippedAfterFirstWalk: skippedAtMs.filter((t) => t > (tally.runs[0]?.startMs ?? 0)).length,
      requestsPerRun: {
        first: requests[0] ?? Number.NaN,
        medianAfter: median(requests.slice(1)),
        max: Math.max(...requests),
      },
      linesPerRunMax: Math.max(...tally.runs.map((r) => r.lines)),
      runsOverLineBound: tally.runs.filter((r) => r.lines > r.actions + r.notices + RULE_COUNT + 1)
        .length,
      policyLinesOutsideRuns: tally.outsideLines,
      auditLines: tally.runs.reduce((n, r) => n + r.auditLines, 0),
      firstActionMs: tally.firstActionMs,
      runMsMedian: median(tally.runs.map((r) => r.ms)),
      actions: acted.length,
      busyActedOn: busy.length,
      activeActedOn: active.length,
      perRun: tally.runs.map(({ acted: _, ...r }) => r),
    };
  } finally {
    await exporter.stop();
    await sim.close();
  }
}

/** This process's node flags, tsx's loader flags left out. */
function nodeFlags(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i] as string;
    if ((flag === "--require" || flag === "--import") && argv[i + 1]?.includes("tsx")) i++;
    else if (!flag.includes("tsx")) out.push(flag);
  }
  return out;
}

/** One line per mostly-idle fleet run: the actions each run took and the candidates it held. */
export function printFleetRuns(label: string, pf: PolicyFleet): void {
  const c = pf.conditions;
  const share = (n: number) => `${Math.round((n * 100) / c.running)} %`;
  console.log(
    `\n${label}: ${c.sandboxes} sandboxes, ${c.running} running (${share(c.idle)} idle, ${share(c.silentBusy)} silent-but-busy, ${share(c.active)} active), ${c.maxActionsPerCycle} actions a cycle, maxMatchPercent ${c.maxMatchPercent}, poll every ${c.schedule}`,
  );
  console.log(`  dry-run actions per run: ${pf.perRun.map((r) => r.actions).join(", ")}`);
  console.log(
    `  held (pending) per run:  ${pf.perRun.map((r) => r.skipped.pending ?? 0).join(", ")}`,
  );
  console.log(
    `  upstream requests per run: first ${pf.requestsPerRun.first}, others (med) ${pf.requestsPerRun.medianAfter}, max ${pf.requestsPerRun.max}; busy acted on ${pf.busyActedOn}, active acted on ${pf.activeActedOn}`,
  );
}
