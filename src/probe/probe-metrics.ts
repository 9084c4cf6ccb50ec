// The probe's metric families in a prom-client registry the caller owns (never the default one).
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { PROBE_PHASES, STREAM_POINTS } from "./phase.js";
import type { ProbeResult } from "./runner.js";

/** Seconds: a local simulator answers in ms, a cold sandbox start takes seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Settings of the probe families. */
export interface ProbeMetricsOptions {
  /** Metric name prefix; default "sandbox". */
  namespace: string;
  /**
   * Counters and histograms across runs (default true). The on-demand /probe answer turns this
   * off: it reports one probe, as blackbox_exporter's /probe does.
   */
  history?: boolean;
  /** Labels every probe series carries: the module (probe configuration) and its template. */
  module: string;
  template: string;
}

/** Labels of every probe series. */
type Id = "module" | "template";

/** Registers the probe families and feeds them from probe results. */
export class ProbeMetrics {
  private readonly success: Gauge<Id>;
  private readonly phaseSeconds: Gauge<Id | "phase">;
  private readonly streamSeconds: Gauge<Id | "point">;
  private readonly keepalives: Gauge<Id>;
  private readonly runSeconds: Gauge<Id>;
  private readonly lastRun: Gauge<Id>;
  private readonly failures: Counter<Id | "phase" | "reason">;
  private readonly phaseHistogram: Histogram<Id | "phase"> | undefined;
  private readonly streamHistogram: Histogram<Id | "point"> | undefined;
  private readonly runs: Counter<Id | "result"> | undefined;
  private readonly orphans: Counter<Id> | undefined;
  private readonly id: Record<Id, string>;

  constructor(registry: Registry, o: ProbeMetricsOptions) {
    const ns = o.namespace;
    this.id = { module: o.module, template: o.template };
    const registers = [registry];
    this.success = new Gauge({
      name: `${ns}_probe_success`,
      help: "Whether the last synthetic probe passed every phase (1) or not (0).",
      labelNames: ["module", "template"],
      registers,
    });
    this.phaseSeconds = new Gauge({
      name: `${ns}_probe_phase_duration_seconds`,
      help: "Duration of each phase of the last probe (phases that did not run are absent).",
      labelNames: ["module", "template", "phase"],
      registers,
    });
    this.streamSeconds = new Gauge({
      name: `${ns}_probe_stream_seconds`,
      help: "Seconds from sending process.Process/Start to each point of its stream, last probe.",
      labelNames: ["module", "template", "point"],
      registers,
    });
    this.keepalives = new Gauge({
      name: `${ns}_probe_keepalives`,
      help: "Keepalive events received on the exec stream of the last probe.",
      labelNames: ["module", "template"],
      registers,
    });
    this.runSeconds = new Gauge({
      name: `${ns}_probe_run_duration_seconds`,
      help: "Duration of the last probe, all phases including terminate.",
      labelNames: ["module", "template"],
      registers,
    });
    this.lastRun = new Gauge({
      name: `${ns}_probe_last_run_timestamp_seconds`,
      help: "When the last probe finished, Unix seconds.",
      labelNames: ["module", "template"],
      registers,
    });
    this.failures = new Counter({
      name: `${ns}_probe_failures_total`,
      help: "Failed probe phases by phase and reason.",
      labelNames: ["module", "template", "phase", "reason"],
      registers,
    });
    if (o.history === false) return;
    this.phaseHistogram = new Histogram({
      name: `${ns}_probe_duration_seconds`,
      help: "Duration of probe phases.",
      labelNames: ["module", "template", "phase"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.streamHistogram = new Histogram({
      name: `${ns}_probe_stream_latency_seconds`,
      help: "Seconds from sending process.Process/Start to each point of its stream.",
      labelNames: ["module", "template", "point"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.runs = new Counter({
      name: `${ns}_probe_runs_total`,
      help: "Probes run, by result (success or failure).",
      labelNames: ["module", "template", "result"],
      registers,
    });
    this.orphans = new Counter({
      name: `${ns}_probe_orphans_deleted_total`,
      help: "Probe sandboxes left behind by earlier runs and deleted by the orphan sweep.",
      labelNames: ["module", "template"],
      registers,
    });
    // Both results exist from the start, so rate() and ratios work before the first failure.
    this.runs.labels({ ...this.id, result: "success" }).inc(0);
    this.runs.labels({ ...this.id, result: "failure" }).inc(0);
    this.orphans.labels(this.id).inc(0);
  }

  /** Records one finished probe. */
  record(result: ProbeResult): void {
    const id = this.id;
    this.success.labels(id).set(result.success ? 1 : 0);
    // Last-value families hold this run only: a phase that did not run has no value.
    this.phaseSeconds.reset();
    this.streamSeconds.reset();
    for (const phase of PROBE_PHASES) {
      const s = result.phases[phase];
      if (s === undefined) continue;
      this.phaseSeconds.labels({ ...id, phase }).set(s);
      this.phaseHistogram?.labels({ ...id, phase }).observe(s);
    }
    for (const point of STREAM_POINTS) {
      const s = result.stream.points[point];
      if (s === undefined) continue;
      this.streamSeconds.labels({ ...id, point }).set(s);
      this.streamHistogram?.labels({ ...id, point }).observe(s);
    }
    this.keepalives.labels(id).set(result.stream.keepalives);
    this.runSeconds.labels(id).set(result.durationSeconds);
    this.lastRun.labels(id).set(result.finishedAt / 1000);
    for (const f of result.failures)
      this.failures.labels({ ...id, phase: f.phase, reason: f.reason }).inc();
    this.runs?.labels({ ...id, result: result.success ? "success" : "failure" }).inc();
  }

  /** Counts sandboxes deleted by the orphan sweep. */
  orphansDeleted(n: number): void {
    this.orphans?.labels(this.id).inc(n);
  }
}
