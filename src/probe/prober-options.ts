// What a prober is given and what it shows: its options, its /status section, its errors.
import type { Registry } from "prom-client";
import type { Clock } from "../util/clock.js";
import { ExporterError } from "../util/errors.js";
import type { ScheduleSpec } from "../util/schedule.js";
import type { Secrets } from "../util/secrets.js";
import type { Slots } from "../util/slots.js";
import type { FailureEntry } from "./failure-log.js";
import type { OrphanSweeper, SweepStatus } from "./orphan-sweep.js";
import type { LifecycleStates, ProbeControl, ProbeData, ProbeHttpSettings } from "./phase.js";
import type { ProbeFamilies } from "./probe-metrics.js";
import type { ProbePhase, ProbeStep } from "./probe-steps.js";
import type { ProbeResult } from "./runner.js";
import type { ProbeTrace } from "./trace.js";

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
  /** Families shared with other modules of the registry; default: registered here. */
  families?: ProbeFamilies;
  /** The module's name (the `module` label); default "default". */
  module?: string;
  /** Extra labels on every series of this module. */
  labels?: Readonly<Record<string, string>>;
  /**
   * The optional steps of a run (create and terminate always run), from the config, which
   * checks what each needs.
   */
  steps: readonly ProbeStep[];
  /** Pause/resume rounds of the lifecycle step, and rounds of the autopause step. */
  lifecycleRounds: number;
  /** The autopause step's sandbox timeout, ms (whole seconds). */
  autoPauseTimeoutMs: number;
  /** The http and autoresume steps' service and request (config `http`). */
  http: ProbeHttpSettings;
  /** State names that read as running and as paused (config `states`). */
  states?: LifecycleStates;
  /** The sweep shared by every module of the instance; default one of its own. */
  sweeper?: OrphanSweeper;
  /** Run slots shared by the modules (concurrency limit); default unlimited. */
  slots?: Slots;
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
  /**
   * Scrubs failure messages, /status and the /probe answer (share the exporter's, which the data
   * client adds agent tokens to); each agent token a probe is given joins it. Default: its own.
   */
  secrets?: Secrets;
}

/** The prober's /status section. */
export interface ProbeStatus {
  enabled: boolean;
  module: string;
  template: string;
  labels: Record<string, string>;
  steps: string[];
  instance: string;
  schedule: string | null;
  /** When the schedule's next tick is due (ISO time); null without a schedule or once stopped. */
  nextRun: string | null;
  inFlight: boolean;
  runs: number;
  skipped: number;
  lastRun: {
    time: string;
    success: boolean;
    durationSeconds: number;
    phases: ProbeResult["phases"];
    stream: ProbeResult["stream"];
    /** Configured steps the platform does not support, which did not run. */
    unsupported?: ProbeStep[];
  } | null;
  orphansDeleted: number;
  lastSweep: SweepStatus | null;
  recentFailures: FailureEntry[];
}

/** How an on-demand run differs from a scheduled one. */
export interface OnDemandOptions {
  /** Caps the run's total timeout (e.g. by the scrape timeout Prometheus sends). */
  timeoutMs?: number;
  /** Records every call of the run (debug=true). */
  trace?: ProbeTrace;
}

/** Invalid prober settings. */
export class ProbeConfigError extends ExporterError {
  constructor(message: string) {
    super("ERR_PROBE_CONFIG", message);
  }
}
