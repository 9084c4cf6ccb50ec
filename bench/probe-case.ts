// Probe timing accuracy: the simulator (its own process) delays the exec stream's start
// and end; the exporter (another process) probes; the parent reads sandbox_probe_stream_seconds
// from /metrics after each run and compares the delayed runs with undelayed ones. Each run also
// pauses and resumes its sandbox once; the delayed runs add latency to those two calls.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StreamFaults } from "../src/simulator/faults.js";
import { dataPlaneFlags } from "../src/simulator/index.js";
import { samples } from "../tools/exposition.js";
import type { ExporterChild } from "./exporter-case.js";
import { forkChild } from "./ipc.js";
import { median, ScrapeClient } from "./scrape-client.js";

export const INJECTED: Required<Pick<StreamFaults, "startDelayMs" | "endDelayMs">> = {
  startDelayMs: 50,
  endDelayMs: 200,
};
/** Latency added to the pause and resume calls of the lifecycle runs. */
export const LIFECYCLE_INJECTED = { pauseMs: 80, resumeMs: 150 };
const POINTS = ["first_envelope", "start", "first_data", "end"] as const;
type Point = (typeof POINTS)[number];
type Points = Record<Point, number>;
const SIM_SANDBOXES = 10;

/** Medians (ms) of each stream point in one condition. */
export type PointMedians = Points & { endMinusFirstData: number };

/** The figures of the probe timing section. */
export interface ProbeTiming {
  runs: number;
  injected: typeof INJECTED;
  baseline: PointMedians;
  delayed: PointMedians;
  /** delayed.start - baseline.start, expected ≈ startDelayMs. */
  startShiftMs: number;
  /** (end - first_data) delayed minus baseline, expected ≈ endDelayMs. */
  endShiftMs: number;
  /** delayed.end - baseline.end, expected ≈ startDelayMs + endDelayMs. */
  endTotalShiftMs: number;
  startErrorMs: number;
  endErrorMs: number;
  endTotalErrorMs: number;
  /** Largest |metric - runner result| seen: the scraped gauge is the runner's own number. */
  metricVsResultMaxMs: number;
  /** The pause and resume phases, from sandbox_probe_phase_duration_seconds (one round a run). */
  lifecycle: {
    injected: typeof LIFECYCLE_INJECTED;
    baseline: { pause: number; resume: number };
    delayed: { pause: number; resume: number };
    pauseShiftMs: number;
    resumeShiftMs: number;
    pauseErrorMs: number;
    resumeErrorMs: number;
  };
}

function medians(runs: Points[]): PointMedians {
  const m = Object.fromEntries(POINTS.map((p) => [p, median(runs.map((r) => r[p]))])) as Points;
  return { ...m, endMinusFirstData: median(runs.map((r) => r.end - r.first_data)) };
}

/** `runs` probes with the injected delays and `runs` without, interleaved so drift hits both. */
export async function probeTiming(
  exporterChild: ExporterChild,
  runs: number,
): Promise<ProbeTiming> {
  const sim = await forkChild<{
    apiUrl: string;
    dataPort: number;
    domain: string;
    template: string;
  }>("bench/sim-child.ts", [String(SIM_SANDBOXES)]);
  const s = sim.ready;
  // The lifecycle step needs a config file (modules and phases have no flags): one round a run.
  const dir = mkdtempSync(join(tmpdir(), "bench-probe-"));
  const config = join(dir, "probe.yaml");
  writeFileSync(config, "probe:\n  steps: [exec, file, lifecycle]\n  lifecycleRounds: 1\n");
  const exporter = await forkChild<{ url: string }>(
    exporterChild.script,
    [
      s.apiUrl,
      "--config",
      config,
      "--retries",
      "0",
      "--sandbox-domain",
      s.domain,
      "--probe",
      "--probe-template",
      s.template,
      ...dataPlaneFlags(s.dataPort),
    ],
    exporterChild.nodeFlags,
  );
  const client = new ScrapeClient(exporter.ready.url);
  const baseline: Points[] = [];
  const delayedRuns: Points[] = [];
  let metricVsResultMaxMs = 0;
  const pauses = { baseline: [] as number[], delayed: [] as number[] };
  const resumes = { baseline: [] as number[], delayed: [] as number[] };
  const once = async (faults: StreamFaults, into: Points[]): Promise<void> => {
    const delayed = into === delayedRuns;
    await sim.call("streamFaults", { ...faults });
    await sim.call("lifecycleLatency", delayed ? LIFECYCLE_INJECTED : { pauseMs: 0, resumeMs: 0 });
    const r = await exporter.call<{ success: boolean; points: Partial<Points>; failures: unknown }>(
      "probe",
    );
    if (!r.success) throw new Error(`probe failed: ${JSON.stringify(r.failures)}`);
    const m = samples(await client.text());
    const p = {} as Points;
    for (const point of POINTS) {
      // Other labels (module, template) may come before the point.
      const key = [...m.keys()].find(
        (k) => k.startsWith("sandbox_probe_stream_seconds{") && k.includes(`point="${point}"`),
      );
      const v = key === undefined ? undefined : m.get(key);
      if (v === undefined) throw new Error(`no sandbox_probe_stream_seconds{point="${point}"}`);
      p[point] = v * 1000;
      const fromResult = (r.points[point] ?? Number.NaN) * 1000;
      metricVsResultMaxMs = Math.max(metricVsResultMaxMs, Math.abs(p[point] - fromResult));
    }
    into.push(p);
    for (const [phase, list] of [
      ["pause", pauses],
      ["resume", resumes],
    ] as const) {
      const key = [...m.keys()].find(
        (k) =>
          k.startsWith("sandbox_probe_phase_duration_seconds{") && k.includes(`phase="${phase}"`),
      );
      const v = key === undefined ? undefined : m.get(key);
      if (v === undefined)
        throw new Error(`no sandbox_probe_phase_duration_seconds{phase="${phase}"}`);
      (delayed ? list.delayed : list.baseline).push(v * 1000);
    }
  };
  try {
    await once({}, []); // warm: first connection, JIT
    for (let i = 0; i < runs; i++) {
      await once({}, baseline);
      await once(INJECTED, delayedRuns);
    }
  } finally {
    await client.close();
    await exporter.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const b = medians(baseline);
  const d = medians(delayedRuns);
  const lb = { pause: median(pauses.baseline), resume: median(resumes.baseline) };
  const ld = { pause: median(pauses.delayed), resume: median(resumes.delayed) };
  const startShiftMs = d.start - b.start;
  const endShiftMs = d.endMinusFirstData - b.endMinusFirstData;
  const endTotalShiftMs = d.end - b.end;
  return {
    runs,
    injected: INJECTED,
    baseline: b,
    delayed: d,
    startShiftMs,
    endShiftMs,
    endTotalShiftMs,
    startErrorMs: startShiftMs - INJECTED.startDelayMs,
    endErrorMs: endShiftMs - INJECTED.endDelayMs,
    endTotalErrorMs: endTotalShiftMs - INJECTED.startDelayMs - INJECTED.endDelayMs,
    metricVsResultMaxMs,
    lifecycle: {
      injected: LIFECYCLE_INJECTED,
      baseline: lb,
      delayed: ld,
      pauseShiftMs: ld.pause - lb.pause,
      resumeShiftMs: ld.resume - lb.resume,
      pauseErrorMs: ld.pause - lb.pause - LIFECYCLE_INJECTED.pauseMs,
      resumeErrorMs: ld.resume - lb.resume - LIFECYCLE_INJECTED.resumeMs,
    },
  };
}
