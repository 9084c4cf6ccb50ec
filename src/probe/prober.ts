// The probe service: schedule, one probe in flight at most, orphan sweeps, metrics, /status, /probe.
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Registry } from "prom-client";
import { type Clock, systemClock } from "../util/clock.js";
import { ExporterError } from "../util/errors.js";
import { type Schedule, type ScheduleSpec, startSchedule } from "../util/schedule.js";
import { type FailureEntry, FailureLog } from "./failure-log.js";
import { probeTag, sweepOrphans } from "./orphan-sweep.js";
import type { ProbeControl, ProbeData, ProbePhase, ProbeSettings } from "./phase.js";
import { ProbeAbortedError } from "./probe-error.js";
import { type ProbeRouteHandler, probeHandler } from "./probe-handler.js";
import { ProbeMetrics } from "./probe-metrics.js";
import { type ProbeResult, type RunnerLimits, runProbe } from "./runner.js";

// Defaults of the options no setting exposes (the others come from the config schema).
/** The module label of the one probe configuration (probe modules will name theirs). */
const DEFAULT_MODULE = "default";
const SWEEP_EVERY_RUNS = 10;
const ON_DEMAND_MIN_INTERVAL_MS = 10_000;
const FAILURE_HISTORY = 20;
/** The sandbox outlives the probe's own limit by this much before the platform reaps it. */
const TTL_MARGIN_S = 60;
const NONCE_BYTES = 8;

/** Structured logger (pino's Logger fits). */
export interface ProbeLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Settings and effects of the prober. */
export interface ProberOptions {
  control: ProbeControl;
  data: ProbeData;
  /** Registry the scheduled probe's families go into (e.g. ExporterMetrics.registry). */
  registry: Registry;
  /** Wall clock: result times, rate limit, orphan age. Default the system clock. */
  clock?: Clock;
  /** Monotonic ms for timings; default performance.now. */
  monotonic?: () => number;
  logger?: ProbeLogger;
  /** Metric name prefix. */
  namespace: string;
  /** false: start() does nothing (no schedule, no sweep). Default true. */
  enabled?: boolean;
  /** Value of the `sandbox-exporter/probe` metadata tag; the sweep only touches its own. */
  instance: string;
  template: string;
  /** Shell command of exec; must contain `{nonce}`. */
  command: string;
  filePath: string;
  /** When probes run; null runs them only through runOnce and /probe. */
  schedule: ScheduleSpec | null;
  phaseTimeoutMs: number;
  phaseTimeouts?: Partial<Record<ProbePhase, number>>;
  totalTimeoutMs: number;
  /** Time to live asked for at create; default total timeout + 60 s. */
  sandboxTtlS?: number;
  keepaliveIntervalS?: number;
  /** Sweep before every Nth scheduled run (and always at start); 0 = only at start. Default 10. */
  sweepEveryRuns?: number;
  /** Minimum ms between two /probe runs; default 10 s. */
  onDemandMinIntervalMs?: number;
  /** Failed phases kept for /status; default 20. */
  failureHistory?: number;
  /** Run the first probe right after the start-up sweep (default true). */
  runAtStart?: boolean;
  nonce?: () => string;
  /** Called as each phase starts. */
  onPhase?: (phase: ProbePhase) => void;
}

/** The prober's /status section. */
export interface ProbeStatus {
  enabled: boolean;
  instance: string;
  schedule: string | null;
  inFlight: boolean;
  runs: number;
  skipped: number;
  lastRun: {
    time: string;
    success: boolean;
    durationSeconds: number;
    phases: ProbeResult["phases"];
    stream: ProbeResult["stream"];
  } | null;
  orphansDeleted: number;
  lastSweep: { time: string; deleted: number; error: string | null } | null;
  recentFailures: FailureEntry[];
}

/** Invalid prober settings. */
export class ProbeConfigError extends ExporterError {
  constructor(message: string) {
    super("ERR_PROBE_CONFIG", message);
  }
}

type Source = "schedule" | "on_demand";

/** Runs synthetic probes on a schedule and on demand, never more than one at a time. */
export class Prober {
  private readonly clock: Clock;
  private readonly monotonic: () => number;
  private readonly settings: ProbeSettings;
  private readonly limits: RunnerLimits;
  private readonly metrics: ProbeMetrics;
  private readonly failures: FailureLog;
  private readonly namespace: string;
  private readonly instance: string;
  private current: { promise: Promise<unknown>; abort: AbortController } | undefined;
  private schedule: Schedule | undefined;
  private started = false;
  private stopped = false;
  private runs = 0;
  private skipped = 0;
  private orphansDeleted = 0;
  private last: ProbeResult | undefined;
  private lastSweep: ProbeStatus["lastSweep"] = null;

  constructor(private readonly o: ProberOptions) {
    this.clock = o.clock ?? systemClock;
    this.monotonic = o.monotonic ?? (() => performance.now());
    this.namespace = o.namespace;
    this.instance = o.instance;
    const { command, totalTimeoutMs } = o;
    if (!command.includes("{nonce}"))
      throw new ProbeConfigError(`probe command must contain {nonce}: ${command}`);
    if (!(totalTimeoutMs > 0)) throw new ProbeConfigError("probe total timeout must be positive");
    this.limits = {
      phaseTimeoutMs: o.phaseTimeoutMs,
      totalTimeoutMs,
      ...(o.phaseTimeouts ? { phaseTimeouts: o.phaseTimeouts } : {}),
    };
    this.settings = {
      template: o.template,
      command,
      filePath: o.filePath,
      metadata: probeTag(this.instance),
      sandboxTtlS: o.sandboxTtlS ?? Math.ceil(totalTimeoutMs / 1000) + TTL_MARGIN_S,
      ...(o.keepaliveIntervalS !== undefined ? { keepaliveIntervalS: o.keepaliveIntervalS } : {}),
    };
    this.metrics = new ProbeMetrics(o.registry, {
      namespace: this.namespace,
      module: DEFAULT_MODULE,
      template: o.template,
    });
    this.failures = new FailureLog(o.failureHistory ?? FAILURE_HISTORY);
  }

  /** Sweeps orphans, then starts the schedule (and the first probe unless runAtStart is false). */
  async start(): Promise<void> {
    if (this.o.enabled === false || this.started || this.stopped) return;
    this.started = true;
    await this.exclusive((signal) => this.sweep(signal));
    if (this.stopped) return;
    this.schedule = startSchedule(
      this.o.schedule ?? undefined,
      async () => {
        await this.runOnce();
      },
      () => this.skip("previous probe still running"),
      (err) => this.o.logger?.warn({ err: String(err) }, "probe run failed unexpectedly"),
    );
    if (this.o.runAtStart !== false) void this.schedule.trigger();
  }

  /** Aborts the probe in flight, waits for it to terminate its sandbox, stops the schedule. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort.abort(new ProbeAbortedError());
    await this.schedule?.stop();
    await this.current?.promise.catch(() => undefined);
  }

  /** Runs one probe into the shared metrics; undefined (counted as skipped) when one is in flight. */
  async runOnce(): Promise<ProbeResult | undefined> {
    if (this.busy()) {
      this.skip("a probe is already running");
      return undefined;
    }
    return this.exclusive(async (signal) => {
      this.runs++;
      const every = this.o.sweepEveryRuns ?? SWEEP_EVERY_RUNS;
      if (every > 0 && this.runs % every === 0) await this.sweep(signal);
      const result = await this.probe(signal, "schedule");
      this.metrics.record(result);
      this.last = result;
      return result;
    });
  }

  /** Runs one probe for /probe (not recorded in the shared metrics); undefined when busy. */
  async runOnDemand(): Promise<ProbeResult | undefined> {
    if (this.busy()) return undefined;
    return this.exclusive((signal) => this.probe(signal, "on_demand"));
  }

  /** Runs the orphan sweep now; the number deleted, or undefined when a probe is in flight. */
  async sweepOrphans(): Promise<number | undefined> {
    if (this.busy()) return undefined;
    return this.exclusive((signal) => this.sweep(signal));
  }

  /** The /status section: counters, the last run and the ring buffer of recent failures. */
  status(): ProbeStatus {
    const last = this.last;
    return {
      enabled: this.o.enabled !== false,
      instance: this.instance,
      schedule: this.o.schedule?.text ?? null,
      inFlight: this.current !== undefined,
      runs: this.runs,
      skipped: this.skipped,
      lastRun: last
        ? {
            time: new Date(last.finishedAt).toISOString(),
            success: last.success,
            durationSeconds: last.durationSeconds,
            phases: last.phases,
            stream: last.stream,
          }
        : null,
      orphansDeleted: this.orphansDeleted,
      lastSweep: this.lastSweep,
      recentFailures: this.failures.entries(),
    };
  }

  /** Routes to mount on the server: GET /probe. */
  routes(): Record<string, ProbeRouteHandler> {
    return {
      "/probe": probeHandler({
        run: () => this.runOnDemand(),
        clock: this.clock,
        minIntervalMs: this.o.onDemandMinIntervalMs ?? ON_DEMAND_MIN_INTERVAL_MS,
        namespace: this.namespace,
        module: DEFAULT_MODULE,
        template: this.settings.template,
      }),
    };
  }

  private busy(): boolean {
    return this.stopped || this.current !== undefined;
  }

  private skip(why: string): void {
    this.skipped++;
    this.o.logger?.warn({ why }, "probe skipped");
  }

  /** Holds the single probe slot while `job` runs; stop() aborts its signal. */
  private async exclusive<T>(job: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const abort = new AbortController();
    const promise = job(abort.signal);
    this.current = { promise, abort };
    try {
      return await promise;
    } finally {
      this.current = undefined;
    }
  }

  private async probe(signal: AbortSignal, source: Source): Promise<ProbeResult> {
    const result = await runProbe(
      {
        control: this.o.control,
        data: this.o.data,
        clock: this.clock,
        monotonic: this.monotonic,
        nonce: this.o.nonce ?? (() => randomBytes(NONCE_BYTES).toString("hex")),
        ...(this.o.onPhase ? { onPhase: this.o.onPhase } : {}),
      },
      this.settings,
      this.limits,
      signal,
    );
    const time = new Date(result.finishedAt).toISOString();
    for (const f of result.failures) {
      this.failures.push({
        time,
        phase: f.phase,
        reason: f.reason,
        error: f.message,
        source,
        ...(result.sandboxId ? { sandboxId: result.sandboxId } : {}),
      });
    }
    const log = { source, sandboxId: result.sandboxId, seconds: result.durationSeconds };
    if (result.success) this.o.logger?.debug(log, "probe passed");
    else this.o.logger?.warn({ ...log, failures: result.failures }, "probe failed");
    if (result.leftBehind)
      this.o.logger?.warn(
        { sandboxId: result.leftBehind },
        "probe sandbox not confirmed deleted; the orphan sweep will retry",
      );
    return result;
  }

  /** Deletes this instance's probe sandboxes older than the total timeout; never throws. */
  private async sweep(signal: AbortSignal): Promise<number> {
    const now = this.clock.now();
    try {
      const r = await sweepOrphans(this.o.control, {
        instance: this.instance,
        minAgeMs: this.limits.totalTimeoutMs,
        now,
        signal,
      });
      this.orphansDeleted += r.deleted.length;
      this.metrics.orphansDeleted(r.deleted.length);
      const error = r.failed.length
        ? `${r.failed.length} deletes failed: ${r.failed[0]?.error}`
        : null;
      this.lastSweep = { time: new Date(now).toISOString(), deleted: r.deleted.length, error };
      if (r.deleted.length || error)
        this.o.logger?.info({ deleted: r.deleted, failed: r.failed }, "probe orphan sweep");
      return r.deleted.length;
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.lastSweep = { time: new Date(now).toISOString(), deleted: 0, error };
      this.o.logger?.warn({ error }, "probe orphan sweep failed");
      return 0;
    }
  }
}
