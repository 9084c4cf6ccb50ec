// Sequences the phases of one probe: stops at the first failure, then always terminates.
import { setTimeout as delay } from "node:timers/promises";
import type { Clock } from "../util/clock.js";
import { deadline, timerMs } from "../util/duration.js";
import type { Secrets } from "../util/secrets.js";
import {
  askingAutoPause,
  autoPauseResumeAgain,
  autoPauseResumeLast,
  autoPauseTimeoutS,
  autoPauseWaitPhase,
  prepareAutoPause,
} from "./autopause.js";
import {
  autoResumeCheckPhase,
  autoResumePausePhase,
  autoResumeWakePhase,
  prepareAutoResume,
} from "./autoresume.js";
import { createPhase } from "./create.js";
import { execPhase } from "./exec.js";
import { fileReadPhase } from "./file-read.js";
import { fileWritePhase } from "./file-write.js";
import { askingForTraffic, httpRequestPhase, httpWaitReadyPhase } from "./http.js";
import { prepareLifecycle } from "./lifecycle.js";
import { pausePhase } from "./pause.js";
import {
  AUTOPAUSE_PHASES,
  AUTORESUME_PHASES,
  HTTP_PHASES,
  LIFECYCLE_PHASES,
  type PhaseFn,
  type ProbeControl,
  type ProbeData,
  type ProbePhase,
  type ProbeRun,
  type ProbeSettings,
  type ProbeStep,
  type StreamTimings,
} from "./phase.js";
import { type FailureReason, failureReason, failureText } from "./probe-error.js";
import { resumePhase } from "./resume.js";
import { stateCheckPhase } from "./state-check.js";
import { terminatePhase } from "./terminate.js";

const PHASE_FNS: Readonly<Record<ProbePhase, PhaseFn>> = {
  create: createPhase,
  exec: execPhase,
  file_write: fileWritePhase,
  file_read: fileReadPhase,
  pause: pausePhase,
  resume: resumePhase,
  state_check: stateCheckPhase,
  autopause_wait: autoPauseWaitPhase,
  autopause_resume: autoPauseResumeAgain,
  autopause_check: stateCheckPhase,
  http_wait_ready: httpWaitReadyPhase,
  http_request: httpRequestPhase,
  autoresume_pause: autoResumePausePhase,
  autoresume_wake: autoResumeWakePhase,
  autoresume_check: autoResumeCheckPhase,
  terminate: terminatePhase,
};

/** The phases that run once, after create and the autopause rounds, for the configured steps. */
function oncePhases(steps: ReadonlyArray<ProbeStep>): ProbePhase[] {
  return [
    ...(steps.includes("exec") ? (["exec"] as const) : []),
    ...(steps.includes("file") ? (["file_write", "file_read"] as const) : []),
  ];
}

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
 * Runs one probe: create, with the autopause step `lifecycleRounds` rounds of waiting for the
 * platform to pause the sandbox by itself, resuming and checking it, the phases of the other
 * configured steps, then `lifecycleRounds` rounds of pause, resume and state_check (after the
 * background process started), then terminate. Failures
 * are data in the result, never a rejection. `signal` (shutdown) aborts every phase but terminate,
 * so the sandbox (paused or not) is deleted before this resolves.
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
  const autoPause = settings.steps.includes("autopause");
  const autoResume = settings.steps.includes("autoresume");
  const restricted = settings.http?.allowPublicTraffic === false;
  // With the autoresume step, create asks for auto-resume; with a restricted http step, for
  // traffic that needs the token.
  const inner =
    autoResume || restricted
      ? askingForTraffic(deps.control, { autoResume, allowPublicTraffic: !restricted }, (c) => {
          run.autoResumeAsked = c.autoResume;
          if (c.trafficToken !== undefined) run.trafficToken = c.trafficToken;
        })
      : deps.control;
  const run: ProbeRun = {
    // With the autopause step, create asks for auto-pause and the step's short timeout.
    control: autoPause
      ? askingAutoPause(inner, autoPauseTimeoutS({ settings }), monotonic, (yes, sentAt) => {
          run.autoPauseAsked = yes;
          run.autoPauseTimerFrom = sentAt;
        })
      : inner,
    data: deps.data,
    settings,
    nonce: deps.nonce(),
    monotonic,
    sleep: deps.sleep ?? ((ms, s) => delay(timerMs(ms), undefined, { signal: s })),
    stream: { points: {}, keepalives: 0 },
  };
  const phases: PhaseSeconds = {};
  const rounds: PhaseSeconds[] = [];
  const failures: ProbeFailure[] = [];
  const unsupported: ProbeStep[] = [];
  // The wait outlasts the sandbox timeout by one phase limit (the grace) unless set on its own.
  const limitOf = (p: ProbePhase): number =>
    limits.phaseTimeouts?.[p] ??
    (p === "autopause_wait" || (p === "autoresume_pause" && autoPause)
      ? limits.phaseTimeoutMs + autoPauseTimeoutS(run) * 1000
      : limits.phaseTimeoutMs);

  // Strong timers (see `deadline`), cleared as soon as their phases end.
  const total = deadline(limits.totalTimeoutMs, signal);
  let failure: ProbeFailure | undefined;
  try {
    failure = await mainPhases();
  } finally {
    total.clear();
  }
  if (failure) failures.push(failure);
  deps.beforeTerminate?.({ ...resultSoFar(), terminatePending: true });
  const limit = limitOf("terminate");
  const terminateDeadline = deadline(limit);
  try {
    const terminated = await timed(
      "terminate",
      terminatePhase,
      timerMs(limit),
      terminateDeadline.signal,
    );
    if (terminated) failures.push(terminated);
  } finally {
    terminateDeadline.clear();
  }
  const leftBehind = run.sandbox?.id;
  return { ...resultSoFar(), ...(leftBehind !== undefined ? { leftBehind } : {}) };

  /** Every phase before terminate; the first failure, if any. */
  async function mainPhases(): Promise<ProbeFailure | undefined> {
    const created = await bounded("create", createPhase);
    if (created) return created;
    if (autoPause) {
      const failed = await autoPauseRounds();
      if (failed) return failed;
    }
    for (const phase of oncePhases(settings.steps)) {
      const failed = await bounded(phase, PHASE_FNS[phase]);
      if (failed) return failed;
    }
    if (settings.steps.includes("http")) {
      for (const phase of HTTP_PHASES) {
        const failed = await bounded(phase, PHASE_FNS[phase]);
        if (failed) return failed;
      }
    }
    if (autoResume) {
      const failed = await autoResumePhases();
      if (failed) return failed;
    }
    if (!settings.steps.includes("lifecycle")) return undefined;
    // Starting the background process is no platform operation worth a duration: its failure is
    // the pause phase's, its time counts only in the total.
    const setup = await bounded("pause", prepareLifecycle, { setup: true });
    if (setup) return setup;
    for (let round = 0; round < Math.max(1, settings.lifecycleRounds); round++) {
      const times: PhaseSeconds = {};
      rounds.push(times);
      for (const phase of LIFECYCLE_PHASES) {
        const failed = await bounded(phase, PHASE_FNS[phase], { round: times });
        if (failed) return failed;
      }
    }
    return undefined;
  }

  /**
   * The autopause rounds: waits for the platform to pause the sandbox by itself, resumes it (the
   * short timeout again but in the last round) and checks it. Never pauses it, never moves its
   * timeout meanwhile. Unsupported (not run, not failed) when create could not ask for auto-pause.
   */
  async function autoPauseRounds(): Promise<ProbeFailure | undefined> {
    if (run.autoPauseAsked !== true) {
      unsupported.push("autopause");
      return undefined;
    }
    const setup = await bounded("autopause_wait", prepareAutoPause, { setup: true });
    if (setup) return setup;
    const last = Math.max(1, settings.lifecycleRounds) - 1;
    for (let round = 0; round <= last; round++) {
      const times: PhaseSeconds = {};
      rounds.push(times);
      for (const phase of AUTOPAUSE_PHASES) {
        // With the autoresume step, the last resume keeps the short timeout: its pause is the next.
        const fn =
          phase === "autopause_resume" && round === last && !autoResume
            ? autoPauseResumeLast
            : PHASE_FNS[phase];
        const failed = await bounded(phase, fn, { round: times });
        if (failed) return failed;
      }
    }
    return undefined;
  }

  /**
   * The autoresume phases: pause (or the platform's auto-pause), wake by traffic alone, check.
   * Unsupported (not run, not failed) when create could not ask for auto-resume.
   */
  async function autoResumePhases(): Promise<ProbeFailure | undefined> {
    if (run.autoResumeAsked !== true) {
      unsupported.push("autoresume");
      return undefined;
    }
    const setup = await bounded("autoresume_pause", prepareAutoResume, { setup: true });
    if (setup) return setup;
    for (const phase of AUTORESUME_PHASES) {
      const failed = await bounded(phase, PHASE_FNS[phase]);
      if (failed) return failed;
    }
    return undefined;
  }

  /** The result as it stands (copies, so a later phase does not change an answer already sent). */
  function resultSoFar(): ProbeResult {
    return {
      success: failures.length === 0,
      startedAt,
      finishedAt: clock.now(),
      durationSeconds: (monotonic() - t0) / 1000,
      phases: { ...phases },
      ...(rounds.length > 0 ? { rounds: rounds.map((r) => ({ ...r })) } : {}),
      stream: { points: { ...run.stream.points }, keepalives: run.stream.keepalives },
      failures: [...failures],
      ...(unsupported.length > 0 ? { unsupported: [...unsupported] } : {}),
      ...(run.http ? { http: { ...run.http } } : {}),
      ...(run.wakeSeconds !== undefined ? { wakeSeconds: run.wakeSeconds } : {}),
      ...(run.sandboxId !== undefined ? { sandboxId: run.sandboxId } : {}),
    };
  }

  /** Runs a phase before terminate within its own limit and what is left of the total. */
  async function bounded(
    phase: ProbePhase,
    fn: PhaseFn,
    o: TimedOptions = {},
  ): Promise<ProbeFailure | undefined> {
    const limit = limitOf(phase);
    const remaining = limits.totalTimeoutMs - (monotonic() - t0);
    const budget = timerMs(Math.min(limit, remaining));
    const phaseDeadline = deadline(limit, total.signal);
    try {
      return await timed(phase, fn, budget, phaseDeadline.signal, o);
    } finally {
      phaseDeadline.clear();
    }
  }

  /** Runs one phase, records its duration and returns its failure, if any. */
  async function timed(
    phase: ProbePhase,
    fn: PhaseFn,
    budget: number,
    phaseSignal: AbortSignal,
    o: TimedOptions = {},
  ): Promise<ProbeFailure | undefined> {
    if (!o.setup) deps.onPhase?.(phase);
    const begin = monotonic();
    try {
      await fn(run, phaseSignal, budget);
      return undefined;
    } catch (err) {
      const reason = failureReason(err, phaseSignal);
      // The agent token is a secret from the moment create hands it out; stream text may echo it.
      deps.secrets?.addTransient(run.sandbox?.accessToken);
      deps.secrets?.addTransient(run.trafficToken);
      const text = describe(phase, reason, err, phaseSignal);
      const message = deps.secrets ? deps.secrets.scrub(text) : text;
      const before =
        phase === "autopause_wait"
          ? "before the first wait"
          : phase === "autoresume_pause"
            ? "before the pause"
            : "before the first pause";
      return { phase, reason, message: o.setup ? `${before}: ${message}` : message };
    } finally {
      deps.secrets?.addTransient(run.sandbox?.accessToken);
      const seconds = (monotonic() - begin) / 1000;
      if (!o.setup) phases[phase] = seconds;
      if (o.round) o.round[phase] = seconds;
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
    return total.signal.aborted && phase !== "terminate"
      ? `${phase}: probe total timeout of ${limits.totalTimeoutMs} ms reached`
      : `${phase}: no result within the phase timeout of ${limitOf(phase)} ms`;
  }
}

/** How a phase run is recorded. */
interface TimedOptions {
  /** Preparation run under the phase's name and limits, but neither announced nor timed. */
  setup?: boolean;
  /** The lifecycle round whose durations it joins. */
  round?: PhaseSeconds;
}
