// One probe module: its schedule, one run in flight at most, its series, /status and /probe runs.
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { type Clock, systemClock } from "../util/clock.js";
import type { Route } from "../util/route.js";
import { type Schedule, startSchedule, tickInterval } from "../util/schedule.js";
import { Secrets } from "../util/secrets.js";
import { FailureLog } from "./failure-log.js";
import { OrphanSweeper, probeTag } from "./orphan-sweep.js";
import type { ProbeSettings } from "./phase.js";
import { ProbeAbortedError } from "./probe-error.js";
import { probeRoute } from "./probe-handler.js";
import { ProbeFamilies, type ProbeId, ProbeMetrics } from "./probe-metrics.js";
import { DEFAULT_PROBE_MODULE } from "./probe-settings.js";
import {
  type OnDemandOptions,
  ProbeConfigError,
  type ProberOptions,
  type ProbeStatus,
} from "./prober-options.js";
import { type ProbeResult, type RunnerLimits, runProbe } from "./runner.js";
import { noSlotResult, SingleRun } from "./single-run.js";

export {
  type OnDemandOptions,
  ProbeConfigError,
  type ProbeLogger,
  type ProberOptions,
  type ProbeStatus,
} from "./prober-options.js";

// Defaults of the options no setting exposes (the others come from the config schema).
/** The first tick after a start-up run comes this much before a whole interval (croner's seconds). */
const FIRST_TICK_LEAD_MS = 500;
const SWEEP_EVERY_RUNS = 10;
/** Minimum ms between two on-demand runs of a module, where no option says otherwise. */
export const ON_DEMAND_MIN_INTERVAL_MS = 10_000;
const FAILURE_HISTORY = 20;
/** The sandbox outlives the probe's own limit by this much before the platform reaps it. */
const TTL_MARGIN_S = 60;
const NONCE_BYTES = 8;

/** An on-demand probe as the run sees it: its cap and where its answer goes before terminate. */
interface OnDemandRun extends OnDemandOptions {
  /** Receives the result once the phases before terminate ended; terminate then runs on. */
  answer?: (result: ProbeResult) => void;
}

type Source = "schedule" | "on_demand";

/** Runs one module's probes on a schedule and on demand, never more than one at a time. */
export class Prober {
  readonly module: string;
  /** The labels of this module's series (module, template and its own). */
  readonly id: ProbeId;
  private readonly clock: Clock;
  private readonly monotonic: () => number;
  private readonly settings: ProbeSettings;
  private readonly limits: RunnerLimits;
  private readonly families: ProbeFamilies;
  private readonly metrics: ProbeMetrics;
  private readonly failures: FailureLog;
  private readonly sweeper: OrphanSweeper;
  private readonly instance: string;
  private readonly secrets: Secrets;
  private readonly single: SingleRun;
  private schedule: Schedule | undefined;
  private started = false;
  private stopped = false;
  private runs = 0;
  private skipped = 0;
  private last: ProbeResult | undefined;

  constructor(private readonly o: ProberOptions) {
    this.clock = o.clock ?? systemClock;
    this.monotonic = o.monotonic ?? (() => performance.now());
    this.single = new SingleRun(o.slots, this.monotonic);
    this.instance = o.instance;
    this.secrets = o.secrets ?? new Secrets();
    this.module = o.module ?? DEFAULT_PROBE_MODULE;
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
      metadata: probeTag(this.instance, this.module),
      sandboxTtlS: o.sandboxTtlS ?? Math.ceil(totalTimeoutMs / 1000) + TTL_MARGIN_S,
      steps: o.steps,
      lifecycleRounds: o.lifecycleRounds,
      autoPauseTimeoutS: Math.ceil(o.autoPauseTimeoutMs / 1000),
      http: o.http,
      ...(o.states ? { states: o.states } : {}),
      ...(o.keepaliveIntervalS !== undefined ? { keepaliveIntervalS: o.keepaliveIntervalS } : {}),
    };
    this.families =
      o.families ??
      new ProbeFamilies(o.registry, {
        namespace: o.namespace,
        extraLabels: Object.keys(o.labels ?? {}),
      });
    this.id = this.families.idOf(this.module, o.template, o.labels);
    this.metrics = new ProbeMetrics(this.families, this.id, (text) => this.secrets.scrub(text));
    this.failures = new FailureLog(o.failureHistory ?? FAILURE_HISTORY);
    this.sweeper =
      o.sweeper ??
      new OrphanSweeper({
        control: o.control,
        instance: this.instance,
        minAgeMs: totalTimeoutMs,
        clock: this.clock,
        ...(o.logger ? { logger: o.logger } : {}),
        onDeleted: () => this.metrics.orphansDeleted(1),
      });
  }

  /** Sweeps orphans, then starts the schedule (and the first probe unless runAtStart is false). */
  async start(): Promise<void> {
    if (this.o.enabled === false || this.started || this.stopped) return;
    this.started = true;
    // A shared sweeper is swept by its owner before the modules start.
    if (!this.o.sweeper) await this.single.run(() => this.sweeper.sweep());
    if (this.stopped) return;
    const spec = this.o.schedule ?? undefined;
    const runNow = this.o.runAtStart !== false;
    // The start-up run goes first: the schedule's first tick comes an interval after it, not at
    // the next whole second while it still runs. croner keeps the system's time, not `clock`'s.
    const firstTickAt =
      spec && runNow ? systemClock.now() + tickInterval(spec) - FIRST_TICK_LEAD_MS : undefined;
    this.schedule = startSchedule(
      spec,
      async () => {
        await this.runOnce();
      },
      () => this.skip("previous probe still running"),
      (err) => {
        // stop() ends a run still waiting for a shared slot: a shutdown, not a failure.
        if (this.stopped && err instanceof ProbeAbortedError) return;
        this.o.logger?.warn({ err }, "probe run failed unexpectedly");
      },
      firstTickAt === undefined ? {} : { firstTickAt },
    );
    if (runNow) void this.schedule.trigger();
  }

  /** Aborts the probe in flight, waits for it to terminate its sandbox, stops the schedule. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.single.abort(new ProbeAbortedError());
    if (!this.o.sweeper) this.sweeper.stop();
    await this.schedule?.stop();
    await this.single.idle();
  }

  /** Runs one probe into the shared metrics; undefined (counted as skipped) when one is in flight. */
  async runOnce(): Promise<ProbeResult | undefined> {
    if (this.busy()) {
      this.skip("a probe is already running");
      return undefined;
    }
    return this.single.run(async (signal) => {
      this.runs++;
      const every = this.o.sweepEveryRuns ?? SWEEP_EVERY_RUNS;
      if (every > 0 && this.runs % every === 0) await this.sweeper.sweep();
      const result = await this.probe(signal, "schedule");
      // A run stop() cut short says nothing of the platform: not counted as a failure.
      if (!cutByStop(result, signal)) this.metrics.record(result, this.settings.steps);
      this.last = result;
      return result;
    });
  }

  /**
   * Runs one probe for /probe (not recorded in the shared metrics); undefined when busy. Resolves
   * within the cap (`timeoutMs`, at most the module's total timeout): waiting for a shared slot
   * counts against it (a `slot` failure when none frees), and it resolves before terminate, which
   * runs on (its outcome goes to /status and the log; the module stays busy until it ends).
   */
  async runOnDemand(o: OnDemandOptions = {}): Promise<ProbeResult | undefined> {
    if (this.busy()) return undefined;
    const capMs = Math.min(o.timeoutMs ?? Number.POSITIVE_INFINITY, this.limits.totalTimeoutMs);
    const begin = this.monotonic();
    return new Promise<ProbeResult>((resolve, reject) => {
      const job = this.single.run(
        (signal) => {
          const left = Math.max(1, capMs - (this.monotonic() - begin));
          return this.probe(signal, "on_demand", { ...o, timeoutMs: left, answer: resolve });
        },
        { ms: capMs, none: (waited) => this.noSlot(capMs, waited) },
      );
      // Settles the answer when the run ended before reaching terminate (e.g. no slot).
      job.then(resolve, reject);
    });
  }

  /** Resolves when no run is in flight: e.g. the terminate an on-demand answer left running. */
  async idle(): Promise<void> {
    await this.single.idle();
  }

  /** Runs the orphan sweep now; the number deleted, or undefined when a probe is in flight. */
  async sweepOrphans(): Promise<number | undefined> {
    if (this.busy()) return undefined;
    return this.single.run(() => this.sweeper.sweep());
  }

  /** The /status section: counters, the last run and the ring buffer of recent failures. */
  status(): ProbeStatus {
    const last = this.last;
    return {
      enabled: this.o.enabled !== false,
      module: this.module,
      template: this.settings.template,
      labels: { ...this.o.labels },
      steps: [...this.settings.steps],
      instance: this.instance,
      schedule: this.o.schedule?.text ?? null,
      nextRun: this.nextRun(),
      inFlight: this.single.busy,
      runs: this.runs,
      skipped: this.skipped,
      lastRun: last
        ? {
            time: new Date(last.finishedAt).toISOString(),
            success: last.success,
            durationSeconds: last.durationSeconds,
            phases: last.phases,
            stream: last.stream,
            ...(last.unsupported ? { unsupported: last.unsupported } : {}),
          }
        : null,
      ...this.sweeper.status(),
      // Scrubbed again as it leaves: a token learned after the entry was written is caught too.
      recentFailures: this.failures
        .entries()
        .map((e) => ({ ...e, error: this.secrets.scrub(e.error) })),
    };
  }

  private nextRun(): string | null {
    const at = this.stopped ? undefined : this.schedule?.nextTick();
    return at === undefined ? null : new Date(at).toISOString();
  }

  /** Routes to mount on the server: GET /probe (this module only). */
  routes(): readonly Route[] {
    return [
      probeRoute({
        modules: [this],
        clock: this.clock,
        monotonic: this.monotonic,
        minIntervalMs: this.o.onDemandMinIntervalMs ?? ON_DEMAND_MIN_INTERVAL_MS,
        namespace: this.o.namespace,
        scrub: (text) => this.secrets.scrub(text),
      }),
    ];
  }

  /** The longest a run may take before terminate: the module's total timeout. */
  get totalTimeoutMs(): number {
    return this.limits.totalTimeoutMs;
  }

  /** The label names of this module's own labels. */
  get labelNames(): string[] {
    return Object.keys(this.o.labels ?? {});
  }

  private busy(): boolean {
    return this.stopped || this.single.busy;
  }

  private skip(why: string): void {
    this.skipped++;
    this.o.logger?.warn({ module: this.module, why }, "probe skipped");
  }

  /** The answer of an on-demand run that got no slot in time (also in /status and the log). */
  private noSlot(capMs: number, waitedMs: number): ProbeResult {
    const result = noSlotResult(this.clock.now(), capMs, waitedMs, this.o.slots?.size ?? 1);
    this.failures.addResult(result, "on_demand");
    this.o.logger?.warn(
      { module: this.module, source: "on_demand", failures: result.failures },
      "probe failed",
    );
    return result;
  }

  private async probe(
    signal: AbortSignal,
    source: Source,
    o: OnDemandRun = {},
  ): Promise<ProbeResult> {
    const trace = o.trace;
    let logged = 0;
    const limits =
      o.timeoutMs !== undefined && o.timeoutMs < this.limits.totalTimeoutMs
        ? { ...this.limits, totalTimeoutMs: o.timeoutMs }
        : this.limits;
    const result = await runProbe(
      {
        control: trace ? trace.wrap(this.o.control, "control") : this.o.control,
        data: trace ? trace.wrap(this.o.data, "data") : this.o.data,
        clock: this.clock,
        monotonic: this.monotonic,
        nonce: this.o.nonce ?? (() => randomBytes(NONCE_BYTES).toString("hex")),
        onPhase: (phase) => {
          trace?.add(`phase ${phase}`);
          this.o.onPhase?.(phase);
        },
        secrets: this.secrets,
        ...(o.answer && {
          beforeTerminate: (partial: ProbeResult) => {
            // /status shows what the answer says as it is sent; terminate's failure joins later.
            logged = this.failures.addResult(partial, source);
            trace?.add("answer sent; terminate runs on (its outcome goes to /status and the log)");
            o.answer?.(partial);
          },
        }),
      },
      this.settings,
      limits,
      signal,
    );
    this.failures.addResult(result, source, logged);
    const log = {
      module: this.module,
      source,
      sandboxId: result.sandboxId,
      seconds: result.durationSeconds,
    };
    if (result.success) this.o.logger?.debug(log, "probe passed");
    else if (cutByStop(result, signal))
      this.o.logger?.info({ ...log, failures: result.failures }, "probe cut short by shutdown");
    else this.o.logger?.warn({ ...log, failures: result.failures }, "probe failed");
    if (result.leftBehind)
      this.o.logger?.warn(
        { module: this.module, sandboxId: result.leftBehind },
        "probe sandbox not confirmed deleted; the orphan sweep will retry",
      );
    return result;
  }
}

/** Whether stop() cut `result` short: its signal aborted and nothing but that abort failed. */
function cutByStop(result: ProbeResult, signal: AbortSignal): boolean {
  return (
    signal.reason instanceof ProbeAbortedError &&
    result.failures.length > 0 &&
    result.failures.every((f) => f.reason === "aborted")
  );
}
