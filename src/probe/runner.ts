// Sequences the phases of one probe: stops at the first failure, then always terminates.
import { setTimeout as delay } from "node:timers/promises";
import type { Clock } from "../util/clock.js";
import { deadline, timerMs } from "../util/duration.js";
import { errorMessage } from "../util/errors.js";
import type { Secrets } from "../util/secrets.js";
import { createPhase } from "./create.js";
import type {
  PhaseFn,
  ProbeControl,
  ProbeData,
  ProbeRun,
  ProbeSettings,
  StreamTimings,
} from "./phase.js";
import { type FailureReason, failureReason, MAX_FAILURE_TEXT } from "./probe-error.js";
import { PROBE_STEPS, type ProbePhase, type ProbeStep, type StepRegistry } from "./probe-steps.js";
import type { StepContext } from "./step.js";
import { terminatePhase } from "./terminate.js";

/** Seconds taken by phases, by phase. */
export type PhaseSeconds = Partial<Record<ProbePhase, number>>;

/** One failed phase. */
export interface ProbeFailure {
  phase: ProbePhase;
  reason: FailureReason;
  message: string;
}

/** What one probe found. */
export interface ProbeResult {
  success: boolean;
  /** Wall-clock epoch ms at start and end. */
  startedAt: number;
  finishedAt: number;
  durationSeconds: number;
  /** Seconds taken by each phase that ran; a lifecycle phase: its last round. */
  phases: PhaseSeconds;
  /**
   * Seconds of the phases of each round that started, in order: the autopause rounds (wait, resume,
   * check), then the lifecycle rounds (pause, resume, state_check).
   */
  rounds?: PhaseSeconds[];
  /** Configured steps the platform does not support (autopause without auto-pause): not run. */
  unsupported?: ProbeStep[];
  /** Seconds from sending the http step's request to its status line and to its whole body. */
  http?: { firstByte: number; total: number };
  /** Seconds the request that woke the paused sandbox took to be answered (the autoresume step). */
  wakeSeconds?: number;
  stream: StreamTimings;
  /** Every failed phase: at most one main phase, then possibly terminate. */
  failures: ProbeFailure[];
  sandboxId?: string;
  /** The probe sandbox, when terminate could not confirm it gone (the orphan sweep will retry). */
  leftBehind?: string;
  /** Taken before terminate ended (the /probe answer): terminate's outcome is not in it. */
  terminatePending?: boolean;
}

/** Effects of a probe run. */
export interface RunnerDeps {
  control: ProbeControl;
  data: ProbeData;
  clock: Clock;
  /** Monotonic milliseconds, for phase and stream timings. */
  monotonic: () => number;
  nonce: () => string;
  /** Called as each phase starts (tests await it instead of sleeping). */
  onPhase?: (phase: ProbePhase) => void;
  /** Waits between two reads of the sandbox's state; default a timer. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Failure messages are scrubbed with it; the agent token create hands out joins it. */
  secrets?: Secrets;
  /** Called with the result so far when the phases before terminate ended (terminate then runs). */
  beforeTerminate?: (result: ProbeResult) => void;
  /** The steps a probe may run, in run order; default the registry (probe-steps.ts). */
  steps?: StepRegistry;
}

/** Time limits of a probe run, ms. */
export interface RunnerLimits {
  /** Default limit of each phase. */
  phaseTimeoutMs: number;
  /** Per-phase overrides. */
  phaseTimeouts?: Partial<Record<ProbePhase, number>>;
  /** Bound on every phase before terminate together; terminate gets its own phase limit on top. */
  totalTimeoutMs: number;
}

/**
 * Runs one probe: create, then the configured steps in the registry's order (each its phases, in
 * rounds for some), then terminate. Failures are data in the result, never a rejection. `signal`
 * (shutdown) aborts every phase but terminate, so the sandbox (paused or not) is deleted before
 * this resolves.
 */
export async function runProbe(
  deps: RunnerDeps,
  settings: ProbeSettings,
  limits: RunnerLimits,
  signal?: AbortSignal,
): Promise<ProbeResult> {
  return new ProbeRunner(deps, settings, limits).execute(signal);
}

/** One probe run: its phases' timings and failures as they happen, and the run they share. */
class ProbeRunner {
  private readonly startedAt: number;
  private readonly t0: number;
  private readonly steps: StepRegistry;
  private readonly run: ProbeRun;
  /** Phase limits a step computes from the run (the autopause wait, for one). */
  private readonly stepLimits = new Map<string, (run: ProbeRun, ms: number) => number>();
  private readonly phases: PhaseSeconds = {};
  private readonly rounds: PhaseSeconds[] = [];
  private readonly failures: ProbeFailure[] = [];
  private readonly unsupported: ProbeStep[] = [];
  /** The bound on every phase before terminate; set when they start. */
  private total: AbortSignal | undefined;

  constructor(
    private readonly deps: RunnerDeps,
    settings: ProbeSettings,
    private readonly limits: RunnerLimits,
  ) {
    this.startedAt = deps.clock.now();
    this.t0 = deps.monotonic();
    this.steps = (deps.steps ?? PROBE_STEPS).filter((s) =>
      settings.steps.includes(s.name as ProbeStep),
    );
    this.run = {
      control: deps.control,
      data: deps.data,
      settings,
      nonce: deps.nonce(),
      monotonic: deps.monotonic,
      sleep: deps.sleep ?? ((ms, s) => delay(timerMs(ms), undefined, { signal: s })),
      stream: { points: {}, keepalives: 0 },
    };
    // Each step asks create for what it needs: auto-pause, auto-resume, restricted traffic.
    for (const step of this.steps) {
      const capability = step.needs?.capability;
      if (capability) this.run.control = capability.ask(this.run.control, this.run);
      if (step.create) this.run.control = step.create(this.run.control, this.run);
    }
    for (const step of this.steps)
      for (const [phase, limit] of Object.entries(step.limits ?? {}))
        if (limit) this.stepLimits.set(phase, limit);
  }

  async execute(signal?: AbortSignal): Promise<ProbeResult> {
    // Strong timers (see `deadline`), cleared as soon as their phases end.
    const total = deadline(this.limits.totalTimeoutMs, signal);
    this.total = total.signal;
    let failure: ProbeFailure | undefined;
    try {
      failure = await this.mainPhases();
    } finally {
      total.clear();
    }
    if (failure) this.failures.push(failure);
    this.deps.beforeTerminate?.({ ...this.resultSoFar(), terminatePending: true });
    await this.terminate();
    const leftBehind = this.run.sandbox?.id;
    return { ...this.resultSoFar(), ...(leftBehind !== undefined ? { leftBehind } : {}) };
  }

  /** Terminate, within its own phase limit: the total bound does not apply to it. */
  private async terminate(): Promise<void> {
    const limit = this.limitOf("terminate");
    const terminateDeadline = deadline(limit);
    try {
      const terminated = await this.timed(
        "terminate",
        terminatePhase,
        timerMs(limit),
        terminateDeadline.signal,
      );
      if (terminated) this.failures.push(terminated);
    } finally {
      terminateDeadline.clear();
    }
  }

  private limitOf(p: ProbePhase): number {
    const { limits } = this;
    return (
      limits.phaseTimeouts?.[p] ??
      this.stepLimits.get(p)?.(this.run, limits.phaseTimeoutMs) ??
      limits.phaseTimeoutMs
    );
  }

  /** Create, then every step; the first failure, if any. */
  private async mainPhases(): Promise<ProbeFailure | undefined> {
    const context = this.stepContext();
    const created = await this.bounded("create", createPhase);
    if (created) return created;
    for (const step of this.steps) {
      // Not run, not failed, where create could not get the capability the step needs.
      const capability = step.needs?.capability;
      if (capability && !capability.granted(this.run)) {
        this.unsupported.push(step.name as ProbeStep);
        continue;
      }
      const failed = await step.run(context);
      if (failed) return failed as ProbeFailure;
    }
    return undefined;
  }

  /** What a step runs its phases with. */
  private stepContext(): StepContext<string> {
    return {
      run: this.run,
      phases: async (list, round) => {
        for (const [phase, fn] of list) {
          const failed = await this.bounded(phase as ProbePhase, fn, round ? { round } : {});
          if (failed) return failed;
        }
        return undefined;
      },
      setup: (phase, fn, before) => this.bounded(phase as ProbePhase, fn, { setup: before }),
      round: () => {
        const times: PhaseSeconds = {};
        this.rounds.push(times);
        return times;
      },
    };
  }

  /** The result as it stands (copies, so a later phase does not change an answer already sent). */
  private resultSoFar(): ProbeResult {
    const { run, rounds, unsupported } = this;
    return {
      success: this.failures.length === 0,
      startedAt: this.startedAt,
      finishedAt: this.deps.clock.now(),
      durationSeconds: (this.deps.monotonic() - this.t0) / 1000,
      phases: { ...this.phases },
      ...(rounds.length > 0 ? { rounds: rounds.map((r) => ({ ...r })) } : {}),
      stream: { points: { ...run.stream.points }, keepalives: run.stream.keepalives },
      failures: [...this.failures],
      ...(unsupported.length > 0 ? { unsupported: [...unsupported] } : {}),
      ...(run.http ? { http: { ...run.http } } : {}),
      ...(run.wakeSeconds !== undefined ? { wakeSeconds: run.wakeSeconds } : {}),
      ...(run.sandboxId !== undefined ? { sandboxId: run.sandboxId } : {}),
    };
  }

  /** Runs a phase before terminate within its own limit and what is left of the total. */
  private async bounded(
    phase: ProbePhase,
    fn: PhaseFn,
    o: TimedOptions = {},
  ): Promise<ProbeFailure | undefined> {
    const limit = this.limitOf(phase);
    const remaining = this.limits.totalTimeoutMs - (this.deps.monotonic() - this.t0);
    const budget = timerMs(Math.min(limit, remaining));
    const phaseDeadline = deadline(limit, this.total);
    try {
      return await this.timed(phase, fn, budget, phaseDeadline.signal, o);
    } finally {
      phaseDeadline.clear();
    }
  }

  /** Runs one phase, records its duration and returns its failure, if any. */
  private async timed(
    phase: ProbePhase,
    fn: PhaseFn,
    budget: number,
    phaseSignal: AbortSignal,
    o: TimedOptions = {},
  ): Promise<ProbeFailure | undefined> {
    const { deps, run } = this;
    if (!o.setup) deps.onPhase?.(phase);
    const begin = deps.monotonic();
    try {
      await fn(run, phaseSignal, budget);
      return undefined;
    } catch (err) {
      const reason = failureReason(err, phaseSignal);
      // The agent token is a secret from the moment create hands it out; stream text may echo it.
      deps.secrets?.addTransient(run.sandbox?.accessToken);
      deps.secrets?.addTransient(run.trafficToken);
      const text = this.describe(phase, reason, err, phaseSignal);
      const message = deps.secrets ? deps.secrets.scrub(text) : text;
      return { phase, reason, message: o.setup ? `${o.setup}: ${message}` : message };
    } finally {
      deps.secrets?.addTransient(run.sandbox?.accessToken);
      const seconds = (deps.monotonic() - begin) / 1000;
      if (!o.setup) this.phases[phase] = seconds;
      if (o.round) o.round[phase] = seconds;
    }
  }

  /** The failure's text: the error's, or which time limit ended the phase. */
  private describe(phase: ProbePhase, reason: FailureReason, err: unknown, s: AbortSignal): string {
    if (!s.aborted) return errorMessage(err, MAX_FAILURE_TEXT);
    if (reason !== "timeout") return errorMessage(s.reason, MAX_FAILURE_TEXT);
    return this.total?.aborted && phase !== "terminate"
      ? `${phase}: probe total timeout of ${this.limits.totalTimeoutMs} ms reached`
      : `${phase}: no result within the phase timeout of ${this.limitOf(phase)} ms`;
  }
}

/** How a phase run is recorded. */
interface TimedOptions {
  /**
   * Preparation run under the phase's name and limits, neither announced nor timed; its failure's
   * message starts with this ("before the first pause").
   */
  setup?: string;
  /** The round whose durations it joins. */
  round?: PhaseSeconds;
}
