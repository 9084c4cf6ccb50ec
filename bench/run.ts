// `npm run bench`: figures (not pass/fail) into bench/results.json and a printed table.
// Every part runs in its own process: the simulator, the exporter under test, the bare undici
// loop and prom-client's baseline are children; this parent only drives them and scrapes.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { demoStartup } from "./demo-case.js";
import { buildExporterChild, exporterCase, pollCase } from "./exporter-case.js";
import { forkChild } from "./ipc.js";
import { policyCost } from "./policy-case.js";
import { probeTiming } from "./probe-case.js";

const SANDBOXES = Number(process.env.BENCH_SANDBOXES ?? 100_000);
const PROBE_RUNS = Number(process.env.BENCH_PROBE_RUNS ?? 20);
const TSX = "node_modules/.bin/tsx";

function runJson(args: string[]): Record<string, number | string> {
  const out = execFileSync(TSX, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const line = out.trim().split("\n").pop() ?? "{}";
  return JSON.parse(line) as Record<string, number | string>;
}

const exporterChild = buildExporterChild();
// The floor under any node process's RSS, for comparison with the exporter child's.
const idleNodeMB = Number(
  execFileSync(
    process.execPath,
    ["--expose-gc", "-e", "gc(); console.log(process.memoryUsage().rss / 1048576)"],
    { encoding: "utf8" },
  ).trim(),
);
const sim = await forkChild<{ apiUrl: string }>("bench/sim-child.ts", [String(SANDBOXES)]);
const bare = await forkChild<{ idleMemoryMB: Record<string, number> }>("bench/bare-loop-child.ts", [
  sim.ready.apiUrl,
]);
let off: Awaited<ReturnType<typeof exporterCase>>;
let on: Awaited<ReturnType<typeof exporterCase>>;
let simMemory: Record<string, number>;
try {
  off = await exporterCase(exporterChild, sim.ready.apiUrl, "off", 100, bare);
  on = await exporterCase(exporterChild, sim.ready.apiUrl, "on", 100, undefined);
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
const bareByStart = await forkChild("bench/bare-loop-child.ts", [simByStart.ready.apiUrl]);
let byStart: Awaited<ReturnType<typeof pollCase>>;
try {
  byStart = await pollCase(exporterChild, simByStart.ready.apiUrl, bareByStart);
} finally {
  await bareByStart.stop();
  await simByStart.stop();
}
const prom = runJson(["bench/prom-client-baseline.ts", String(SANDBOXES), "5"]);
const probe = await probeTiming(exporterChild, PROBE_RUNS);
const policy = await policyCost(SANDBOXES);
const demo = await demoStartup();

const bareMs = off.bareLoopMs ?? Number.NaN;
const results = {
  date: new Date().toISOString(),
  node: process.version,
  sandboxes: SANDBOXES,
  isolation: `exporter (compiled JS on plain node, flags of the image's ENTRYPOINT: ${exporterChild.nodeFlags.join(" ") || "none"}), simulator, bare loop and prom-client (under tsx) each in their own child process; scrape client in the parent`,
  pollCycle: {
    cycleMs: off.cycleMs,
    walkMs: off.walkMs,
    cycleCpuMs: off.cycleCpuMs,
    bareUndiciLoopCpuMs: off.bareLoopCpuMs,
    bareUndiciLoopMs: bareMs,
    ratio: off.cycleMs / bareMs,
    cycleOnMs: on.cycleMs,
    target: "<= 1.3",
  },
  pollCycleNewestFirst: {
    cycleMs: byStart.cycleMs,
    bareUndiciLoopMs: byStart.bareLoopMs,
    ratio: byStart.cycleMs / (byStart.bareLoopMs ?? Number.NaN),
    cycleCpuMs: byStart.cycleCpuMs,
    bareUndiciLoopCpuMs: byStart.bareLoopCpuMs,
    order: "start time, newest first, then id (E2B's order)",
  },
  scrapeOff: { ...off.scrape, target: "p99 < 20 ms" },
  scrapeOn: { ...on.scrape, target: "p99 < 100 ms" },
  gzipOff: off.gzip,
  gzipOn: { ...on.gzip, target: "p99 < 100 ms" },
  promClientBaseline: {
    series: prom.series,
    renderP50Ms: prom.renderP50Ms,
    bytes: prom.bytes,
    speedupOfOursP99: Number(prom.renderP50Ms) / on.scrape.p99Ms,
    target: ">= 5x",
  },
  rss: {
    offMB: off.memory.afterCycleGc.rss,
    onMB: on.memory.afterCycleGc.rss,
    offNoGcMB: off.memory.afterCycle.rss,
    onNoGcMB: on.memory.afterCycle.rss,
    offAfterScrapesMB: off.memory.afterScrapesGc.rss,
    onAfterScrapesMB: on.memory.afterScrapesGc.rss,
    exporterStartedMB: off.memory.start.rss,
    idleNodeMB,
    idleTsxChildMB: bare.ready.idleMemoryMB.rss,
    simulatorMB: simMemory.rss,
    measured:
      "the exporter child's process.memoryUsage().rss; offMB/onMB after a forced GC; idleNodeMB: an empty node process",
    target: "off < 150 MB, on < 400 MB",
  },
  memoryMB: { off: off.memory, on: on.memory },
  probeTiming: {
    ...probe,
    compared:
      "start: delayed minus no-delay start; end: (end - first_data) delayed minus no-delay, as the simulator waits endDelayMs after the last output; endTotal: delayed minus no-delay end (both delays)",
    target: "|error| <= 2 ms",
  },
  demoStartup: { ...demo, target: "first /metrics answer < 5000 ms" },
  policyCycle: {
    ...policy,
    measured:
      "in-process simulator and exporter; policyMs: the engine's run (log reads, evaluation, dry-run actions); cycleMs: the whole poll cycle including it",
  },
};
writeFileSync("bench/results.json", `${JSON.stringify(results, null, 2)}\n`);

const num = (v: unknown) =>
  typeof v === "number" ? v.toFixed(1) : v === undefined ? "" : String(v);
const row = (k: string, v: unknown, base: unknown, target: string) =>
  console.log(`${k.padEnd(40)} ${num(v).padStart(12)} ${num(base).padStart(14)}  ${target}`);
const m = off.memory;
const n = on.memory;
console.log(`\nsandbox-exporter bench, ${SANDBOXES} sandboxes, ${off.pages} pages`);
console.log(`(${results.isolation})\n`);
console.log(`${"measure".padEnd(40)} ${"ours".padStart(12)} ${"baseline".padStart(14)}  target`);
row(
  "poll cycle ms (vs bare undici loop)",
  off.cycleMs,
  bareMs,
  `ratio ${results.pollCycle.ratio.toFixed(2)} (<= 1.3)`,
);
row("poll cycle CPU ms (vs bare loop CPU)", off.cycleCpuMs, off.bareLoopCpuMs, "");
row(
  "poll cycle ms, pages newest first (E2B)",
  byStart.cycleMs,
  byStart.bareLoopMs,
  `ratio ${results.pollCycleNewestFirst.ratio.toFixed(2)}`,
);
row("poll cycle CPU ms, newest first", byStart.cycleCpuMs, byStart.bareLoopCpuMs, "");
row("poll cycle ms, per-sandbox on", on.cycleMs, undefined, "");
row("scrape p50 ms, per-sandbox off", off.scrape.p50Ms, undefined, "");
row("scrape p99 ms, per-sandbox off", off.scrape.p99Ms, undefined, "< 20");
row("scrape bytes, per-sandbox off", off.scrape.bytes, undefined, "");
row("scrape p50 ms, per-sandbox on", on.scrape.p50Ms, undefined, "");
row(
  "scrape p99 ms, per-sandbox on",
  on.scrape.p99Ms,
  prom.renderP50Ms,
  `prom-client render; ${results.promClientBaseline.speedupOfOursP99.toFixed(1)}x (>= 5x); < 100`,
);
row("scrape bytes, per-sandbox on", on.scrape.bytes, prom.bytes, "");
row("gzip scrape p99 ms, per-sandbox off", off.gzip.p99Ms, undefined, "as Prometheus scrapes");
row("gzip scrape p50 ms, per-sandbox on", on.gzip.p50Ms, undefined, "");
row("gzip scrape p99 ms, per-sandbox on", on.gzip.p99Ms, prom.renderP50Ms, "< 100");
row("gzip scrape bytes, per-sandbox on", on.gzip.bytes, undefined, "");
row(
  "RSS MB after cycle + GC, off",
  m.afterCycleGc.rss,
  idleNodeMB,
  "< 150; baseline: empty node process",
);
row(
  "RSS MB after cycle + GC, on",
  n.afterCycleGc.rss,
  idleNodeMB,
  "< 400; baseline: empty node process",
);
row(
  "RSS MB after cycle, no GC, off / on",
  m.afterCycle.rss,
  n.afterCycle.rss,
  "(on in baseline column)",
);
row(
  "RSS MB after scrapes + GC, off / on",
  m.afterScrapesGc.rss,
  n.afterScrapesGc.rss,
  "(on in baseline column)",
);
row("RSS MB exporter started, before cycle", m.start.rss, undefined, "");
row(
  "heap used MB after cycle + GC, off / on",
  m.afterCycleGc.heapUsed,
  n.afterCycleGc.heapUsed,
  "(on in baseline column)",
);
row("RSS MB simulator process (not counted)", simMemory.rss, undefined, "");
row("RSS MB idle child under tsx (not counted)", bare.ready.idleMemoryMB.rss, undefined, "");
const p = probe;
const { startDelayMs, endDelayMs } = p.injected;
console.log(
  `\nprobe stream timing (issue #5): ${p.runs} runs each, injected start +${p.injected.startDelayMs} ms, end +${p.injected.endDelayMs} ms; medians in ms\n`,
);
console.log(
  `${"measure".padEnd(40)} ${"delayed".padStart(12)} ${"no delay".padStart(14)}  shift (target) error`,
);
const shift = (v: number, want: number, err: number) =>
  `${v.toFixed(2)} (${want}) ${err >= 0 ? "+" : ""}${err.toFixed(2)} ms`;
row(
  "start point ms",
  p.delayed.start,
  p.baseline.start,
  shift(p.startShiftMs, startDelayMs, p.startErrorMs),
);
row("first_data point ms", p.delayed.first_data, p.baseline.first_data, "");
row(
  "end point ms",
  p.delayed.end,
  p.baseline.end,
  shift(p.endTotalShiftMs, startDelayMs + endDelayMs, p.endTotalErrorMs),
);
row(
  "end - first_data ms",
  p.delayed.endMinusFirstData,
  p.baseline.endMinusFirstData,
  shift(p.endShiftMs, endDelayMs, p.endErrorMs),
);
console.log(
  "start: delayed minus no-delay start point ≈ startDelayMs. end: the simulator waits endDelayMs after the\n" +
    "last output, so (end - first_data) delayed minus no-delay ≈ endDelayMs; the end point itself moves by both.\n" +
    `Target |error| <= 2 ms. Scraped gauge vs runner result: max |diff| ${p.metricVsResultMaxMs.toFixed(4)} ms.`,
);
const pc = policy;
console.log(
  `\npolicy cycle (issue #6): ${pc.sandboxes} sandboxes, ${pc.matching} pass the cheap filters, ${pc.idle} idle\n`,
);
console.log(`${"measure".padEnd(40)} ${"cold".padStart(12)} ${"warm".padStart(14)}`);
row("log reads issued", pc.cold.logReads, pc.warm.logReads, "warm: only those that could be idle");
row("policy run ms", pc.cold.policyMs, pc.warm.policyMs, "");
row("poll cycle incl. policy ms", pc.cold.cycleMs, pc.warm.cycleMs, "");
row("candidates (idle, matching)", pc.cold.candidates, pc.warm.candidates, "");
console.log("");
row("demo: first /metrics answer ms (median)", demo.medianMs, undefined, "< 5000");
row("demo: first /metrics answer ms (max)", demo.maxMs, undefined, `of ${demo.runs.length} starts`);
console.log("\nwritten to bench/results.json");
