// The printed table of `npm run bench`: each figure with its baseline, how many runs or samples
// it is from, and its target or what it is compared with.
import type { DemoStartup } from "./demo-case.js";
import type { EventsBench, Latency } from "./events-case.js";
import type { CaseFigures, PollFigures } from "./exporter-case.js";
import type { LatencyCase, LatencyFigures } from "./latency-case.js";
import type { PolicyCost } from "./policy-case.js";
import type { PolicyFleet } from "./policy-fleet-case.js";
import type { ProbeTiming } from "./probe-case.js";
import type { RenderComparison } from "./render-case.js";
import type { ScaleCase } from "./scale-case.js";

/** Everything the table shows. */
export interface Parts {
  off: CaseFigures;
  on: CaseFigures;
  byStart: PollFigures;
  probe: ProbeTiming;
  policy: PolicyCost;
  policyFleet: PolicyFleet;
  demo: DemoStartup;
  render: RenderComparison;
  latency: LatencyCase;
  scale: { sandboxes: number; simulatorMB: number; cases: ScaleCase[] } | undefined;
  events: EventsBench;
}

const num = (v: unknown) =>
  typeof v === "number"
    ? Number.isInteger(v)
      ? String(v)
      : v.toFixed(1)
    : v === undefined
      ? ""
      : String(v);

function row(k: string, v: unknown, base: unknown, n: string, note: string): void {
  console.log(
    `${k.padEnd(46)} ${num(v).padStart(11)} ${num(base).padStart(11)}  ${n.padEnd(16)} ${note}`,
  );
}

function head(title: string, ours = "ours", base = "baseline"): void {
  console.log(`\n${title}\n`);
  console.log(
    `${"measure".padEnd(46)} ${ours.padStart(11)} ${base.padStart(11)}  ${"from".padEnd(16)} note / target`,
  );
}

const ratio = (a: number, b: number | undefined) => (b ? a / b : Number.NaN);

function latencyRow(k: string, f: LatencyFigures, n: string): void {
  row(`${k} p50 / p99 ms`, f.p50Ms, f.p99Ms, `${f.n} ${n}`, `max ${f.maxMs.toFixed(1)} ms`);
}

/** The machine line every table starts with. */
export function printMachine(machine: {
  cpus: number;
  loadAverage1m: { start?: number; end?: number };
}): void {
  const load = machine.loadAverage1m;
  console.log(
    `${machine.cpus} CPUs; 1-minute load average ${num(load.start)} at the start, ${num(load.end)} at the end`,
  );
}

/** Prints the whole table. */
export function printTable(
  results: {
    sandboxes: number;
    isolation: string;
    machine: { cpus: number; loadAverage1m: { start?: number; end?: number } };
  },
  p: Parts,
): void {
  const { off, on, byStart, render, latency } = p;
  const cycles = `med of ${off.runs} pairs`;
  console.log(`\nsandbox-exporter bench, ${results.sandboxes} sandboxes, ${off.pages} pages`);
  console.log(`(${results.isolation})`);
  printMachine(results.machine);

  head("poll cycle (per-sandbox off unless said)", "exporter", "bare loop");
  row(
    "poll cycle ms, paged by id",
    off.cycleMs,
    off.bareLoopMs,
    cycles,
    `ratio ${ratio(off.cycleMs, off.bareLoopMs).toFixed(2)} (<= 1.3)`,
  );
  row("poll cycle CPU ms, paged by id", off.cycleCpuMs, off.bareLoopCpuMs, cycles, "");
  row(
    "poll cycle ms, newest first (E2B)",
    byStart.cycleMs,
    byStart.bareLoopMs,
    `med of ${byStart.runs} pairs`,
    `ratio ${ratio(byStart.cycleMs, byStart.bareLoopMs).toFixed(2)}`,
  );
  row(
    "poll cycle CPU ms, newest first",
    byStart.cycleCpuMs,
    byStart.bareLoopCpuMs,
    `med of ${byStart.runs} pairs`,
    "",
  );
  row("poll cycle ms, per-sandbox on", on.cycleMs, undefined, `med of ${on.runs}`, "");

  head("render: the bytes of one snapshot, per-sandbox on", "ours", "prom-client");
  const rr = `med of ${render.runs}`;
  const r = render;
  row(
    `first render ms (${r.series} series)`,
    r.ours.firstMs,
    r.promClient.loadMs + r.promClient.renderMs,
    rr,
    `ours: update, fresh; prom-client: set gauges + metrics(); ${ratio(r.promClient.loadMs + r.promClient.renderMs, r.ours.firstMs).toFixed(1)}x`,
  );
  row(
    "re-render ms, 1 % of sandboxes changed",
    r.ours.steadyMs,
    r.promClient.renderMs,
    rr,
    `render vs render: ours update, prom-client metrics(); ${ratio(r.promClient.renderMs, r.ours.steadyMs).toFixed(1)}x (>= 5x)`,
  );
  row(
    "re-render ms through updateAsync",
    r.ours.steadyAsyncMs,
    undefined,
    rr,
    "yields to the event loop every 1,000 sandboxes",
  );
  row(
    "prom-client setting its gauges ms",
    undefined,
    r.promClient.loadMs,
    rr,
    "reset + set of 5 gauges per sandbox",
  );
  row("rendered bytes", r.ours.bytes, r.promClient.bytes, "", "");

  row(
    "cached scrape p99 (on) vs prom-client render ms",
    on.scrape.p99Ms,
    r.promClient.renderMs,
    `${on.scrape.n} / med of ${r.runs}`,
    `scrape of our cached bytes vs prom-client render: ${ratio(r.promClient.renderMs, on.scrape.p99Ms).toFixed(1)}x`,
  );

  head("scrapes of the cached body, no cycle running", "p50", "p99");
  const sc = `${off.scrape.n} scrapes`;
  row("scrape ms, per-sandbox off", off.scrape.p50Ms, off.scrape.p99Ms, sc, "p99 < 20");
  row("gzip scrape ms, per-sandbox off", off.gzip.p50Ms, off.gzip.p99Ms, sc, "");
  row("scrape ms, per-sandbox on", on.scrape.p50Ms, on.scrape.p99Ms, sc, "p99 < 100");
  row("gzip scrape ms, per-sandbox on", on.gzip.p50Ms, on.gzip.p99Ms, sc, "p99 < 100");
  row("bytes per-sandbox on, plain / gzip", on.scrape.bytes, on.gzip.bytes, "", "");

  head(
    `/metrics while cycles run: per-sandbox on, a cycle every ${latency.scheduleMs / 1000} s, Prometheus 2.42 scrapes every ${latency.scrapeEveryMs} ms`,
    "p50",
    "p99",
  );
  latencyRow("during cycles", latency.duringCycles, "scrapes");
  latencyRow("between cycles", latency.betweenCycles, "scrapes");
  latencyRow("idle (no cycle at all)", latency.idle, "scrapes");
  const ld = latency.loopDelayDuringCycles;
  row(
    "exporter event-loop delay p50 / p99 ms",
    ld.p50Ms,
    ld.p99Ms,
    `${latency.cycles} cycles`,
    `max ${ld.maxMs.toFixed(1)} ms; 10 ms resolution`,
  );
  row(
    "cycle start to body + gzip cached ms",
    latency.cycleToCachedMs,
    undefined,
    `med of ${latency.cycles}`,
    "target: p99 < 50 ms during cycles",
  );
  row(
    "the same over the cycle's own walk ms",
    latency.walkMs,
    undefined,
    `med of ${latency.cycles}`,
    `ratio ${latency.cycleToCachedVsWalk.toFixed(2)} (median of each cycle's; <= 1.2)`,
  );

  const m = off.memory;
  const n = on.memory;
  const afterCycles = `after ${off.runs + off.warmRuns} cycles`;
  head("memory (MB) of the exporter process", "off", "on");
  row(
    `RSS ${afterCycles}, as is (no forced GC)`,
    m.afterCycles.rss,
    n.afterCycles.rss,
    "1 reading",
    "",
  );
  row(
    `RSS ${afterCycles}, after a forced GC`,
    m.afterCyclesForcedGc.rss,
    n.afterCyclesForcedGc.rss,
    "1 reading",
    "off < 150, on < 400",
  );
  row("RSS after the scrapes, as is", m.afterScrapes.rss, n.afterScrapes.rss, "1 reading", "");
  row(
    "RSS after the scrapes, after a forced GC",
    m.afterScrapesForcedGc.rss,
    n.afterScrapesForcedGc.rss,
    "1 reading",
    "",
  );
  row(
    "heap used after cycles, after a forced GC",
    m.afterCyclesForcedGc.heapUsed,
    n.afterCyclesForcedGc.heapUsed,
    "1 reading",
    "",
  );
  row(
    "RSS exporter started, before any cycle",
    m.start.rss,
    n.start.rss,
    "1 reading",
    "after a forced GC",
  );

  if (p.scale) printScale(p.scale);
  printProbe(p.probe);
  printPolicy(p.policy, p.policyFleet);
  printEvents(p.events);
  console.log("");
  const d = p.demo;
  row(
    "demo: first /metrics answer ms, median / max",
    d.medianMs,
    d.maxMs,
    `${d.runs.length} starts`,
    "< 5000",
  );
}

export function printScale(s: {
  sandboxes: number;
  simulatorMB: number;
  cases: ScaleCase[];
}): void {
  head(
    `${s.sandboxes} sandboxes (simulator RSS ${s.simulatorMB.toFixed(0)} MB); RSS rows: as is, then after a forced GC`,
    "exporter",
    "bare loop",
  );
  for (const c of s.cases) {
    const pairs = `med of ${c.poll.runs} pairs`;
    row(
      `${c.label}: poll cycle ms`,
      c.poll.cycleMs,
      c.poll.bareLoopMs,
      pairs,
      `ratio ${ratio(c.poll.cycleMs, c.poll.bareLoopMs).toFixed(2)}; first cycle ${c.firstCycleMs.toFixed(0)} ms`,
    );
    row(`${c.label}: poll cycle CPU ms`, c.poll.cycleCpuMs, c.poll.bareLoopCpuMs, pairs, "");
    row(
      `${c.label}: RSS cycle 1, as is / GC`,
      c.memory.afterCycle1.rss,
      c.memory.afterCycle1ForcedGc.rss,
      "1 reading",
      "",
    );
    row(
      `${c.label}: RSS cycle 2, as is / GC`,
      c.memory.afterCycle2.rss,
      c.memory.afterCycle2ForcedGc.rss,
      "1 reading",
      "",
    );
    console.log(
      `  ${c.label}: RSS as read after cycles 1-4: ${c.rssAfterCycles.map((m) => m.toFixed(0)).join(", ")} MB`,
    );
    row(
      `${c.label}: gzip scrape p50 / p99 ms`,
      c.gzipScrape.p50Ms,
      c.gzipScrape.p99Ms,
      `${c.gzipScrape.n} scrapes`,
      `${Math.round(c.gzipScrape.bytes / 1024)} KiB gzip`,
    );
  }
}

function printProbe(p: ProbeTiming): void {
  const { startDelayMs, endDelayMs } = p.injected;
  head(
    `probe stream timing: injected start +${startDelayMs} ms, end +${endDelayMs} ms; medians in ms`,
    "delayed",
    "no delay",
  );
  const shift = (v: number, want: number, err: number) =>
    `shift ${v.toFixed(2)} (${want}) error ${err >= 0 ? "+" : ""}${err.toFixed(2)} ms`;
  const runs = `med of ${p.runs} each`;
  row(
    "start point ms",
    p.delayed.start,
    p.baseline.start,
    runs,
    shift(p.startShiftMs, startDelayMs, p.startErrorMs),
  );
  row("first_data point ms", p.delayed.first_data, p.baseline.first_data, runs, "");
  row(
    "end point ms",
    p.delayed.end,
    p.baseline.end,
    runs,
    shift(p.endTotalShiftMs, startDelayMs + endDelayMs, p.endTotalErrorMs),
  );
  row(
    "end - first_data ms",
    p.delayed.endMinusFirstData,
    p.baseline.endMinusFirstData,
    runs,
    shift(p.endShiftMs, endDelayMs, p.endErrorMs),
  );
  const l = p.lifecycle;
  row(
    "pause phase ms",
    l.delayed.pause,
    l.baseline.pause,
    runs,
    shift(l.pauseShiftMs, l.injected.pauseMs, l.pauseErrorMs),
  );
  row(
    "resume phase ms",
    l.delayed.resume,
    l.baseline.resume,
    runs,
    shift(l.resumeShiftMs, l.injected.resumeMs, l.resumeErrorMs),
  );
  console.log(
    "start: delayed minus no-delay start point ≈ startDelayMs. end: the simulator waits endDelayMs after the\n" +
      "last output, so (end - first_data) delayed minus no-delay ≈ endDelayMs; the end point itself moves by both.\n" +
      `Target |error| <= 2 ms. Scraped gauge vs runner result: max |diff| ${p.metricVsResultMaxMs.toFixed(4)} ms.`,
  );
}

/** The policy's sections: the cost of a run, then the policy on a large fleet. */
export function printPolicy(pc: PolicyCost, pf: PolicyFleet): void {
  head(
    `policy cycle: ${pc.sandboxes} sandboxes, ${pc.matching} pass the cheap filters, ${pc.idle} idle`,
    "cold",
    "warm",
  );
  row(
    "log reads issued",
    pc.cold.logReads,
    pc.warm.logReads,
    "1 run each",
    "a sample per idle rule, then what the run needs",
  );
  row("policy run ms", pc.cold.policyMs, pc.warm.policyMs, "1 run each", "");
  row("poll cycle incl. policy ms", pc.cold.cycleMs, pc.warm.cycleMs, "1 run each", "");
  row("candidates (idle, matching)", pc.cold.candidates, pc.warm.candidates, "1 run each", "");
  printPolicyFleet(pf);
}

function printPolicyFleet(pf: PolicyFleet): void {
  const c = pf.conditions;
  const share = (n: number) => `${Math.round((n * 100) / c.running)} %`;
  head(
    `policy on a large fleet: ${c.sandboxes} sandboxes, ${c.running} running (${share(c.idle)} idle, ${share(c.silentBusy)} silent-but-busy, ${share(c.active)} active), ${c.latencyMs} ms on every request;\n` +
      `poll every ${c.schedule}, pages of ${c.pageLimit}, ${c.maxRequestsPerSecond} requests/s budget; one dry-run pause rule on every running sandbox, idle by logs and CPU,\n` +
      `${c.maxActionsPerCycle} actions a cycle, maxMatchPercent ${c.maxMatchPercent}; ${pf.isolation}.\n` +
      "Before: the engine inside the poll cycle cannot be run any more; that column quotes the issue's figures",
    "after",
    "before",
  );
  const runs = `${pf.runs} runs`;
  const req = pf.requestsPerRun;
  row(
    "upstream requests per run: first / others (med)",
    req.first,
    req.medianAfter,
    runs,
    `max ${req.max}; before: about 2,000 log reads per cycle`,
  );
  row(
    "poll ticks skipped",
    pf.skippedTicks,
    "some",
    `${pf.pollCycles} cycles`,
    `target 0${pf.skippedAtMs.length ? `; at ${pf.skippedAtMs.map((t) => `${(t / 1000).toFixed(1)} s`).join(", ")} after the start, ${pf.skippedAfterFirstWalk} after the first walk` : ""}; last walk ${(pf.walkMs / 1000).toFixed(1)} s`,
  );
  row(
    "policy log lines per run, max",
    pf.linesPerRunMax,
    "11925/20 s",
    runs,
    `target <= actions + rules + 1: ${pf.runsOverLineBound} runs over; ${pf.auditLines} audit lines in all; before: 11,925 audit lines in 20 s`,
  );
  row(
    "start to the first action ms",
    pf.firstActionMs,
    undefined,
    "1 start",
    `consecutiveCycles 2: the second run's; median run ${(pf.runMsMedian / 1000).toFixed(1)} s`,
  );
  row(
    "dry-run actions in all",
    pf.actions,
    undefined,
    runs,
    `per run: ${pf.perRun.map((r) => r.actions).join(", ")}`,
  );
  row(
    "busy sandboxes acted on (dry-run)",
    pf.busyActedOn,
    undefined,
    `${pf.actions} actions`,
    `target 0; active ones acted on: ${pf.activeActedOn}`,
  );
}

/** The lifecycle events sections: webhook ingestion, then the events collector's catch-up. */
export function printEvents(e: EventsBench): void {
  const w = e.webhook;
  const a = w.accepted;
  const d = w.duplicates;
  head(
    `lifecycle webhook: signed deliveries of one event (${w.bodyBytes} B), ${w.concurrency} keep-alive connections (undici Pool),\n` +
      `${w.templates} templates, 8 kill reasons; in process: client, exporter and simulator on one event loop;\n` +
      "/metrics scraped every 100 ms as Prometheus 2.42 (gzip) during the deliveries, and with none",
    "p50",
    "p99",
  );
  const lat = (k: string, l: Latency, n: string, note = "") =>
    row(k, l.p50Ms, l.p99Ms, `${l.n} ${n}`, `max ${l.maxMs.toFixed(1)} ms${note}`);
  row(
    "new events: deliveries per second",
    a.perSecond,
    undefined,
    `${a.deliveries} deliveries`,
    `${a.seconds.toFixed(2)} s; answers ${statusText(a.statuses)}`,
  );
  lat("new events: delivery ms", a.latency, "deliveries");
  lat("new events: /metrics during deliveries ms", a.scrape, "scrapes");
  row(
    "duplicates: deliveries per second",
    d.perSecond,
    undefined,
    `${d.deliveries} deliveries`,
    `${d.seconds.toFixed(2)} s; answers ${statusText(d.statuses)}`,
  );
  lat("duplicates: delivery ms", d.latency, "deliveries");
  lat("duplicates: /metrics during deliveries ms", d.scrape, "scrapes");
  lat(
    "no deliveries, empty ledger: /metrics ms",
    w.idleBefore,
    "scrapes",
    `; ${w.scrapeBytes.before} B gzip`,
  );
  lat(
    "no deliveries, after them: /metrics ms",
    w.idleAfter,
    "scrapes",
    `; ${w.scrapeBytes.after} B gzip`,
  );
  const m = w.memory;
  row(
    "RSS MB before / after new events",
    m.before.rssMB,
    m.afterAccepted.rssMB,
    "1 reading each",
    `after forced GCs; after duplicates ${m.afterDuplicates.rssMB.toFixed(1)}`,
  );
  row(
    "heap used MB before / after new events",
    m.before.heapUsedMB,
    m.afterAccepted.heapUsedMB,
    "1 reading each",
    `after duplicates ${m.afterDuplicates.heapUsedMB.toFixed(1)}`,
  );
  row(
    "bytes per remembered id: RSS delta / ledger alone",
    m.bytesPerIdRss,
    m.isolatedLedgerBytesPerId,
    `${m.remembered} ids`,
    `approximate; heap delta in process ${m.bytesPerIdHeap.toFixed(0)}`,
  );

  const c = e.catchUp;
  head(
    `events collector catch-up: ${c.events} events over ${c.spanMinutes.toFixed(0)} min in the simulator's log, look-back ${c.lookback},\n` +
      "at most 10 pages of 100 a tick; in process (the tick's ms include the simulator answering)",
    "value",
    "",
  );
  row("ticks until every event is counted", c.ticks, undefined, "1 run", `${c.counted} counted`);
  row(
    "requests until then",
    c.requests,
    undefined,
    "1 run",
    `simulator counted ${c.simulatorRequests}; ${(c.events / c.requests).toFixed(0)} new events a request`,
  );
  row(
    "events collector ms per tick, median / max",
    c.tickMs.median,
    c.tickMs.max,
    `${c.tickMs.n} ticks`,
    "the whole cycle's wall time (no sandboxes: the events read)",
  );
  row(
    "after: requests per tick with no new event",
    c.steady.requests.join(", "),
    undefined,
    `${c.steady.requests.length} ticks`,
    `the settle margin read again; ms ${c.steady.ms.map((m) => m.toFixed(1)).join(", ")}`,
  );
}

function statusText(statuses: Record<string, number>): string {
  return Object.entries(statuses)
    .map(([s, n]) => `${n} x ${s}`)
    .join(", ");
}
