// Sequences the phases of one probe: stops at the first failure, then always terminates.
import type { Clock } from "../util/clock.js";
import { timeoutSignal, timerMs } from "../util/duration.js";
import { createPhase } from "./create.js";
import { execPhase } from "./exec.js";
import { fileReadPhase } from "./file-read.js";
import { fileWritePhase } from "./file-write.js";
import type {
  PhaseFn,
  ProbeControl,
  ProbeData,
  ProbePhase,
  ProbeRun,
  ProbeSettings,
  StreamTimings,
} from "./phase.js";
import { type FailureReason, failureReason, failureText } from "./probe-error.js";
import { terminatePhase } from "./terminate.js";

/** Phases that stop at the first failure; terminate runs after them whatever happened. */
const MAIN_PHASES: ReadonlyArray<[ProbePhase, PhaseFn]> = [
  ["create", createPhase],
  ["exec", execPhase],
  ["file_write", fileWritePhase],
  ["file_read", fileReadPhase],
];

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
  /** Seconds taken by each phase that ran. */
  phases: Partial<Record<ProbePhase, number>>;
  stream: StreamTimings;
  /** Every failed phase: at most one main phase, then possibly terminate. */
  failures: ProbeFailure[];
  sandboxId?: string;
  /** The probe sandbox, when terminate could not confirm it gone (the orphan sweep will retry). */
  leftBehind?: string;
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
}

/** Time limits of a probe run, ms. */
export interface RunnerLimits {
  /** Default limit of each phase. */
  phaseTimeoutMs: number;
  /** Per-phase overrides. */
  phaseTimeouts?: Partial<Record<ProbePhase, number>>;
  /** Bound on create..file_read together; terminate gets its own phase limit on top. */
  totalTimeoutMs: number;
}

/**
 * Runs one probe. Failures are data in the result, never a rejection. `signal` (shutdown) aborts
 * the main phases but not terminate, so the sandbox is deleted before this resolves.
 */
export async function runProbe(
  deps: RunnerDeps,
  settings: ProbeSettings,
  limits: RunnerLimits,
  signal?: AbortSignal,
): Promise<ProbeResult> {
  const { clock, monotonic } = deps;
  const startedAt = clock.now();
  const t0 = monotonic();
  const run: ProbeRun = {
    control: deps.control,
    data: deps.data,
    settings,
    nonce: deps.nonce(),
    monotonic,
    stream: { points: {}, keepalives: 0 },
  };
  const phases: ProbeResult["phases"] = {};
  const failures: ProbeFailure[] = [];
  const limitOf = (p: ProbePhase): number => limits.phaseTimeouts?.[p] ?? limits.phaseTimeoutMs;

  const total = timeoutSignal(limits.totalTimeoutMs);
  const outer = signal ? AbortSignal.any([signal, total]) : total;
  for (const [phase, fn] of MAIN_PHASES) {
    const limit = limitOf(phase);
    const remaining = limits.totalTimeoutMs - (monotonic() - t0);
    const budget = timerMs(Math.min(limit, remaining));
    const phaseSignal = AbortSignal.any([outer, timeoutSignal(limit)]);
    const failure = await timed(phase, fn, budget, phaseSignal);
    if (failure) {
      failures.push(failure);
      break;
    }
  }
  const limit = limitOf("terminate");
  const terminated = await timed("terminate", terminatePhase, timerMs(limit), timeoutSignal(limit));
  if (terminated) failures.push(terminated);
  const leftBehind = run.sandbox?.id;
  const finishedAt = clock.now();
  return {
    success: failures.length === 0,
    startedAt,
    finishedAt,
    durationSeconds: (monotonic() - t0) / 1000,
    phases,
    stream: run.stream,
    failures,
    ...(run.sandboxId !== undefined ? { sandboxId: run.sandboxId } : {}),
    ...(leftBehind !== undefined ? { leftBehind } : {}),
  };

  /** Runs one phase, records its duration and returns its failure, if any. */
  async function timed(
    phase: ProbePhase,
    fn: PhaseFn,
    budget: number,
    phaseSignal: AbortSignal,
  ): Promise<ProbeFailure | undefined> {
    deps.onPhase?.(phase);
    const begin = monotonic();
    try {
      await fn(run, phaseSignal, budget);
      return undefined;
    } catch (err) {
      const reason = failureReason(err, phaseSignal);
      return { phase, reason, message: describe(phase, reason, err, phaseSignal) };
    } finally {
      phases[phase] = (monotonic() - begin) / 1000;
    }
  }

  function describe(
    phase: ProbePhase,
    reason: FailureReason,
    err: unknown,
    s: AbortSignal,
  ): string {
    if (!s.aborted) return failureText(err);
    if (reason !== "timeout") return failureText(s.reason);
    return total.aborted && phase !== "terminate"
      ? `${phase}: probe total timeout of ${limits.totalTimeoutMs} ms reached`
      : `${phase}: no result within the phase timeout of ${limitOf(phase)} ms`;
  }
}
