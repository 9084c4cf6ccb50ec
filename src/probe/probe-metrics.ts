// The probe's metric families in a prom-client registry the caller owns (never the default one).
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import {
  counter,
  type FamilyDescriptor,
  gauge,
  histogram,
  labelNames,
  metricOptions,
  setting,
} from "../exposition/descriptor.js";
import { STREAM_POINTS } from "./phase.js";
import type { FailureReason } from "./probe-error.js";
import { PROBE_PHASES } from "./probe-steps.js";
import type { ProbeResult } from "./runner.js";

/** Seconds: a local simulator answers in ms, a cold sandbox start takes seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Seconds: a wake from a snapshot takes from under a second to a minute (E2B waits up to 60 s). */
const WAKE_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 30, 60];
/** Points of the http step's request, timed from sending it. */
const HTTP_POINTS = { first_byte: "firstByte", total: "total" } as const;

/** Every value of the `reason` label, so each phase's failures exist at 0 before the first one. */
const FAILURE_REASONS = [
  "http_status",
  "timeout",
  "network",
  "bad_body",
  "malformed_stream",
  "truncated",
  "end_stream_error",
  "missing_end",
  "exit_code",
  "wrong_output",
  "mismatch",
  "not_deleted",
  "not_paused",
  "not_resumed",
  "not_auto_paused",
  "not_found",
  "port_closed",
  "bad_status",
  "body_mismatch",
  "body_too_large",
  "not_restricted",
  "not_auto_resumed",
  "wake_timeout",
  "file_lost",
  "process_lost",
  "aborted",
  "slot",
  "other",
] as const satisfies readonly FailureReason[];
// Fails to compile when FailureReason gains a value this list lacks.
const everyReason: [Exclude<FailureReason, (typeof FAILURE_REASONS)[number]>] extends [never]
  ? true
  : never = true;
void everyReason;

/** A module's series: its name and template; a module's own labels follow these. */
const ID = ["module", "template"];

const ON = { on: setting("probe.enabled") };

export const PROBE_SUCCESS = gauge(
  "probe_success",
  "Whether the last synthetic probe passed every phase (1) or not (0).",
  ID,
  ON,
);
export const PROBE_PHASE_SECONDS = gauge(
  "probe_phase_duration_seconds",
  "Duration of each phase of the last probe (phases that did not run are absent).",
  [...ID, "phase"],
  ON,
);
export const PROBE_STREAM_SECONDS = gauge(
  "probe_stream_seconds",
  "Seconds from sending process.Process/Start to each point of its stream, last probe.",
  [...ID, "point"],
  ON,
);
export const PROBE_KEEPALIVES = gauge(
  "probe_keepalives",
  "Keepalive events received on the exec stream of the last probe.",
  ID,
  ON,
);
export const PROBE_RUN_SECONDS = gauge(
  "probe_run_duration_seconds",
  "Duration of the last probe, all phases including terminate.",
  ID,
  ON,
);
export const PROBE_LAST_RUN = gauge(
  "probe_last_run_timestamp_seconds",
  "When the last probe finished, Unix seconds.",
  ID,
  ON,
);
export const PROBE_FAILURES = counter(
  "probe_failures_total",
  "Failed probe phases by phase and reason.",
  [...ID, "phase", "reason"],
  ON,
);
export const PROBE_STEP_SUPPORTED = gauge(
  "probe_step_supported",
  "Whether the platform supports each optional step the module runs (0: the step is skipped as unsupported, e.g. autopause where the platform has no auto-pause; not a failure).",
  [...ID, "step"],
  ON,
);
export const PROBE_HTTP_SECONDS = gauge(
  "probe_http_duration_seconds",
  "Seconds from sending the http step's request to a sandbox port to its status line (point first_byte) and its whole body (total), last probe.",
  [...ID, "point"],
  ON,
);
export const PROBE_WAKE = histogram(
  "probe_wake_seconds",
  "Seconds from sending a request to a paused sandbox's port to its answer (the autoresume step: the request alone wakes it).",
  ID,
  ON,
);
export const PROBE_DURATION = histogram(
  "probe_duration_seconds",
  "Duration of probe phases (each lifecycle round observed on its own).",
  [...ID, "phase"],
  ON,
);
export const PROBE_STREAM_LATENCY = histogram(
  "probe_stream_latency_seconds",
  "Seconds from sending process.Process/Start to each point of its stream.",
  [...ID, "point"],
  ON,
);
export const PROBE_RUNS = counter(
  "probe_runs_total",
  "Probes run, by result (success or failure).",
  [...ID, "result"],
  ON,
);
export const PROBE_ORPHANS = counter(
  "probe_orphans_deleted_total",
  "Probe sandboxes left behind by earlier runs and deleted by the orphan sweep.",
  ID,
  ON,
);
export const PROBE_FAMILIES = [
  PROBE_SUCCESS,
  PROBE_PHASE_SECONDS,
  PROBE_STREAM_SECONDS,
  PROBE_KEEPALIVES,
  PROBE_RUN_SECONDS,
  PROBE_LAST_RUN,
  PROBE_FAILURES,
  PROBE_STEP_SUPPORTED,
  PROBE_HTTP_SECONDS,
  PROBE_WAKE,
  PROBE_DURATION,
  PROBE_STREAM_LATENCY,
  PROBE_RUNS,
  PROBE_ORPHANS,
] as const;

/** prom-client options of a probe family: `id` (module, template, the modules' own) then its own. */
function probeOptions(ns: string, d: FamilyDescriptor, id: readonly string[]) {
  const { name, help } = metricOptions(ns, d);
  return { name, help, labelNames: [...id, ...labelNames(d).slice(ID.length)] };
}

/** Settings of the probe families. */
export interface ProbeFamiliesOptions {
  /** Metric name prefix; default "sandbox". */
  namespace: string;
  /**
   * Counters and histograms across runs (default true). The on-demand /probe answer turns this
   * off: it reports one probe, as blackbox_exporter's /probe does.
   */
  history?: boolean;
  /** Label names of the modules' own labels (the union over every module; absent ones are ""). */
  extraLabels?: readonly string[];
}

/** The labels that name one module's series: module, template and the module's own labels. */
export type ProbeId = Record<string, string>;

/** The probe families of one registry, shared by every module (one family, a module per label). */
export class ProbeFamilies {
  readonly success: Gauge<string>;
  readonly phaseSeconds: Gauge<string>;
  readonly streamSeconds: Gauge<string>;
  readonly keepalives: Gauge<string>;
  readonly runSeconds: Gauge<string>;
  readonly lastRun: Gauge<string>;
  readonly failures: Counter<string>;
  readonly stepSupported: Gauge<string>;
  readonly httpSeconds: Gauge<string>;
  readonly wakeHistogram: Histogram<string> | undefined;
  readonly phaseHistogram: Histogram<string> | undefined;
  readonly streamHistogram: Histogram<string> | undefined;
  readonly runs: Counter<string> | undefined;
  readonly orphans: Counter<string> | undefined;
  readonly idLabels: readonly string[];

  constructor(registry: Registry, o: ProbeFamiliesOptions) {
    const ns = o.namespace;
    const id = ["module", "template", ...(o.extraLabels ?? [])];
    this.idLabels = id;
    const registers = [registry];
    this.success = new Gauge({ ...probeOptions(ns, PROBE_SUCCESS, id), registers });
    this.phaseSeconds = new Gauge({ ...probeOptions(ns, PROBE_PHASE_SECONDS, id), registers });
    this.streamSeconds = new Gauge({ ...probeOptions(ns, PROBE_STREAM_SECONDS, id), registers });
    this.keepalives = new Gauge({ ...probeOptions(ns, PROBE_KEEPALIVES, id), registers });
    this.runSeconds = new Gauge({ ...probeOptions(ns, PROBE_RUN_SECONDS, id), registers });
    this.lastRun = new Gauge({ ...probeOptions(ns, PROBE_LAST_RUN, id), registers });
    this.failures = new Counter({ ...probeOptions(ns, PROBE_FAILURES, id), registers });
    this.stepSupported = new Gauge({ ...probeOptions(ns, PROBE_STEP_SUPPORTED, id), registers });
    this.httpSeconds = new Gauge({ ...probeOptions(ns, PROBE_HTTP_SECONDS, id), registers });
    const history = o.history === false ? undefined : historyFamilies(registry, ns, id);
    this.wakeHistogram = history?.wakeHistogram;
    this.phaseHistogram = history?.phaseHistogram;
    this.streamHistogram = history?.streamHistogram;
    this.runs = history?.runs;
    this.orphans = history?.orphans;
  }

  /** The full label set of a module: its id labels, "" for the others' extra labels. */
  idOf(module: string, template: string, labels: Readonly<Record<string, string>> = {}): ProbeId {
    const id: ProbeId = {};
    for (const name of this.idLabels) id[name] = labels[name] ?? "";
    id.module = module;
    id.template = template;
    return id;
  }
}

/** Feeds one module's series from its probe results. */
export class ProbeMetrics {
  constructor(
    private readonly f: ProbeFamilies,
    private readonly id: ProbeId,
    /** Applied to the sandbox id before it becomes an exemplar (the registry's text is not scrubbed). */
    private readonly scrub: (text: string) => string = (text) => text,
  ) {
    // Counters across runs exist at 0 from the start, so rate(), increase() and ratios count the
    // first failure and stat panels read 0, not "No data". The on-demand /probe answer (no
    // history) reports the failures of its one probe only.
    if (!f.runs) return;
    f.runs.labels({ ...id, result: "success" }).inc(0);
    f.runs.labels({ ...id, result: "failure" }).inc(0);
    f.orphans?.labels(id).inc(0);
    for (const phase of PROBE_PHASES)
      for (const reason of FAILURE_REASONS) f.failures.labels({ ...id, phase, reason }).inc(0);
  }

  /** Records one finished probe; `steps`: the module's optional steps, for step_supported. */
  record(result: ProbeResult, steps: readonly string[] = []): void {
    const { f, id } = this;
    const unsupported = new Set<string>(result.unsupported ?? []);
    for (const step of steps)
      f.stepSupported.labels({ ...id, step }).set(unsupported.has(step) ? 0 : 1);
    const exemplar =
      result.sandboxId === undefined
        ? undefined
        : probeExemplar(this.scrub(result.sandboxId), id.module ?? "");
    f.success.labels(id).set(result.success ? 1 : 0);
    // Last-value families hold this run only: a phase that did not run has no value.
    for (const phase of PROBE_PHASES) {
      const s = result.phases[phase];
      if (s === undefined) {
        f.phaseSeconds.remove({ ...id, phase });
        continue;
      }
      f.phaseSeconds.labels({ ...id, phase }).set(s);
      // A lifecycle phase runs once a round: the histogram sees every round.
      const rounds = result.rounds?.flatMap((r) => (r[phase] === undefined ? [] : [r[phase]]));
      for (const v of rounds?.length ? rounds : [s])
        observe(f.phaseHistogram, { ...id, phase }, v, exemplar);
    }
    for (const point of STREAM_POINTS) {
      const s = result.stream.points[point];
      if (s === undefined) {
        f.streamSeconds.remove({ ...id, point });
        continue;
      }
      f.streamSeconds.labels({ ...id, point }).set(s);
      observe(f.streamHistogram, { ...id, point }, s, exemplar);
    }
    for (const [point, key] of Object.entries(HTTP_POINTS)) {
      const s = result.http?.[key];
      if (s === undefined) f.httpSeconds.remove({ ...id, point });
      else f.httpSeconds.labels({ ...id, point }).set(s);
    }
    if (result.wakeSeconds !== undefined)
      observe(f.wakeHistogram, id, result.wakeSeconds, exemplar);
    f.keepalives.labels(id).set(result.stream.keepalives);
    f.runSeconds.labels(id).set(result.durationSeconds);
    f.lastRun.labels(id).set(result.finishedAt / 1000);
    for (const fail of result.failures)
      f.failures.labels({ ...id, phase: fail.phase, reason: fail.reason }).inc();
    f.runs?.labels({ ...id, result: result.success ? "success" : "failure" }).inc();
  }

  /** Counts sandboxes of this module deleted by the orphan sweep. */
  orphansDeleted(n: number): void {
    this.f.orphans?.labels(this.id).inc(n);
  }
}

/** OpenMetrics 1.0 caps an exemplar's label names and values together at 128 characters. */
const EXEMPLAR_MAX_CHARS = 128;

/**
 * The exemplar labels of a probe sandbox within OpenMetrics' limit: the module (already a label
 * of the series) is cut first, then dropped; the id is cut only past 112 characters, to a prefix.
 */
export function probeExemplar(sandboxId: string, module: string): Record<string, string> {
  const room = EXEMPLAR_MAX_CHARS - "sandbox_id".length - "module".length;
  const id = cut(sandboxId, room);
  const mod = cut(module, room - id.length);
  return mod ? { sandbox_id: id, module: mod } : { sandbox_id: id };
}

/**
 * The longest prefix of whole code points whose UTF-16 length is at most `max`: prom-client
 * counts `.length` (and throws past 128), never less than the spec's UTF-8 characters.
 */
function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  let out = "";
  for (const ch of s) {
    if (out.length + ch.length > max) break;
    out += ch;
  }
  return out;
}

/** Observes `value`, with `exemplar` on its bucket when the run had a sandbox. */
function observe(
  h: Histogram<string> | undefined,
  labels: ProbeId,
  value: number,
  exemplar: Record<string, string> | undefined,
): void {
  if (exemplar) h?.observe({ labels, value, exemplarLabels: exemplar });
  else h?.labels(labels).observe(value);
}

/** The families that keep history (histograms and counters), in their registration order. */
function historyFamilies(registry: Registry, ns: string, id: readonly string[]) {
  const registers = [registry];
  const wakeHistogram = new Histogram({
    ...probeOptions(ns, PROBE_WAKE, id),
    buckets: WAKE_BUCKETS,
    enableExemplars: true,
    registers: [],
  });
  registry.registerMetric(wakeHistogram);
  // prom-client refuses exemplars on a metric of a text-format registry, whose writer would
  // drop them; ours writes them in OpenMetrics only (exposition/openmetrics.ts), so the
  // histograms join the registry by hand and the 0.0.4 text stays as it was.
  const phaseHistogram = new Histogram({
    ...probeOptions(ns, PROBE_DURATION, id),
    buckets: DURATION_BUCKETS,
    enableExemplars: true,
    registers: [],
  });
  registry.registerMetric(phaseHistogram);
  const streamHistogram = new Histogram({
    ...probeOptions(ns, PROBE_STREAM_LATENCY, id),
    buckets: DURATION_BUCKETS,
    enableExemplars: true,
    registers: [],
  });
  registry.registerMetric(streamHistogram);
  const runs = new Counter({
    ...probeOptions(ns, PROBE_RUNS, id),
    registers,
  });
  const orphans = new Counter({
    ...probeOptions(ns, PROBE_ORPHANS, id),
    registers,
  });
  return { wakeHistogram, phaseHistogram, streamHistogram, runs, orphans };
}
