// The render comparison, one renderer per process (compiled, with the exporter's node flags) so
// neither's heap weighs on the other. Arguments: "ours" or "prom-client", sandboxes, runs.
// Prints one JSON line: medians over `runs` measured renders after one unmeasured (JIT warm-up).

import { Gauge, Registry } from "prom-client";
import { COLLECTORS, ConfigSchema, TICK_COLLECTORS } from "../src/catalog.js";
import type { CollectorName, CollectorStatus, Snapshot } from "../src/collect/snapshot.js";
import { ExporterMetrics } from "../src/metrics/exporter-metrics.js";
import type { Sandbox } from "../src/platform/types.js";
import { systemClock } from "../src/util/clock.js";
import { benchFleet, changedFleet } from "./render-fleet.js";
import { median } from "./scrape-client.js";

/** The configuration's state defaults, from the schema. */
const DEFAULT_STATES = ConfigSchema.parse({}).states;

const [mode = "ours", nArg = "100000", runsArg = "5"] = process.argv.slice(2);
const N = Number(nArg);
const RUNS = Number(runsArg);
const gc = (): void => global.gc?.();

function timed(f: () => void): number {
  gc();
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

async function timedAsync(f: () => Promise<void>): Promise<number> {
  gc();
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

function snapshotOf(sandboxes: Sandbox[], cycle: number): Snapshot {
  const now = systemClock.now();
  const collectors = {} as Record<CollectorName, CollectorStatus>;
  for (const name of COLLECTORS)
    collectors[name] = {
      name,
      success: true,
      stale: false,
      lastAttemptAt: now,
      lastSuccessAt: now,
      durationMs: 1,
      requests: 1,
      ...(name === "usage" ? { skipped: true } : {}),
    };
  return {
    cycle,
    startedAt: now,
    finishedAt: now,
    sandboxes,
    sandboxesComplete: true,
    walked: true,
    refreshed: COLLECTORS.filter((n) => n !== "usage"),
    collectors,
  };
}

function newMetrics(): ExporterMetrics {
  return new ExporterMetrics({
    namespace: "sandbox",
    collectors: TICK_COLLECTORS,
    perSandboxMetrics: true,
    metadataLabels: [],
    maxSandboxSeries: N,
    maxLabelValueLength: 1024,
    shard: { index: 0, total: 1 },
    runningStates: DEFAULT_STATES.running,
    pausedStates: DEFAULT_STATES.paused,
    clock: systemClock,
    version: "bench",
  });
}

/**
 * ExporterMetrics.update: first renders (each by a fresh instance), then re-renders of walks that
 * differ from the one before in 1 % of their sandboxes; update and updateAsync take turns.
 */
async function ours(fleet: Sandbox[]): Promise<Record<string, number>> {
  const first: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const m = newMetrics();
    const ms = timed(() => m.update(snapshotOf(fleet, 1)));
    if (i > 0) first.push(ms);
  }
  const m = newMetrics();
  m.update(snapshotOf(fleet, 1));
  const steady: number[] = [];
  const steadyAsync: number[] = [];
  let walk = fleet;
  for (let i = 0; i <= RUNS; i++) {
    walk = changedFleet(walk, 2 * i);
    const snap = snapshotOf(walk, 2 * i + 2);
    const ms = timed(() => m.update(snap));
    walk = changedFleet(walk, 2 * i + 1);
    const next = snapshotOf(walk, 2 * i + 3);
    const asyncMs = await timedAsync(() => m.updateAsync(next));
    if (i > 0) {
      steady.push(ms);
      steadyAsync.push(asyncMs);
    }
  }
  const body = await m.render("prometheus", false);
  return {
    firstMs: median(first),
    steadyMs: median(steady),
    steadyAsyncMs: median(steadyAsync),
    bytes: body.body.reduce((n, b) => n + b.byteLength, 0),
  };
}

/** prom-client: the five per-sandbox gauges ours renders, set from the fleet, then registry.metrics(). */
async function promClient(fleet: Sandbox[]): Promise<Record<string, number>> {
  const registry = new Registry();
  const registers = [registry];
  const info = new Gauge({
    name: "sandbox_sandbox_info",
    help: "One series per sandbox, value 1.",
    labelNames: ["sandbox_id", "template", "state"],
    registers,
  });
  const gauge = (name: string, help: string) =>
    new Gauge({ name, help, labelNames: ["sandbox_id"], registers });
  const start = gauge("sandbox_sandbox_start_time_seconds", "Start time, Unix seconds.");
  const end = gauge("sandbox_sandbox_end_timestamp_seconds", "Scheduled end time, Unix seconds.");
  const cpus = gauge("sandbox_sandbox_cpus", "CPU count.");
  const mem = gauge("sandbox_sandbox_memory_bytes", "Memory.");
  const load = (walk: Sandbox[]): void => {
    for (const g of [info, start, end, cpus, mem]) g.reset();
    for (const s of walk) {
      info.labels(s.id, s.templateId, s.state).set(1);
      if (s.startedAt !== undefined) start.labels(s.id).set(s.startedAt / 1000);
      if (s.endAt !== undefined) end.labels(s.id).set(s.endAt / 1000);
      if (s.cpuCount !== undefined) cpus.labels(s.id).set(s.cpuCount);
      if (s.memoryMB !== undefined) mem.labels(s.id).set(s.memoryMB * 1_048_576);
    }
  };
  const loads: number[] = [];
  const renders: number[] = [];
  let bytes = 0;
  let walk = fleet;
  for (let i = 0; i <= RUNS; i++) {
    walk = changedFleet(walk, i);
    const loadMs = timed(() => load(walk));
    gc();
    const t0 = performance.now();
    const text = await registry.metrics();
    const renderMs = performance.now() - t0;
    bytes = Buffer.byteLength(text);
    if (i > 0) {
      loads.push(loadMs);
      renders.push(renderMs);
    }
  }
  return { loadMs: median(loads), renderMs: median(renders), bytes };
}

const fleet = benchFleet(N);
/** Series of the per-sandbox families both sides render: info, then each value the record has. */
const series = fleet.reduce(
  (n, s) =>
    n + 1 + [s.startedAt, s.endAt, s.cpuCount, s.memoryMB].filter((v) => v !== undefined).length,
  0,
);
const figures = mode === "prom-client" ? await promClient(fleet) : await ours(fleet);
process.stdout.write(`${JSON.stringify({ mode, sandboxes: N, series, runs: RUNS, ...figures })}\n`);
