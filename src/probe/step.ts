// The contract of a probe step (blackbox_exporter's prober, one file each): its name, what it
// needs, its phases and failure reasons, and how it runs. The registry (probe-steps.ts) lists the
// steps in the order they run; the runner, the config and the metrics read them from there.
import type { PhaseFn, ProbeControl, ProbeRun } from "./phase.js";
import type { FailureReason } from "./probe-error.js";

/** Seconds taken by phases, by phase name. */
export type PhaseTimes = Partial<Record<string, number>>;

/** One failed phase of a step. */
export interface StepFailure {
  phase: string;
  reason: FailureReason;
  message: string;
}

/** The settings of a module a step's config check reads (probe-settings.ts fills them in). */
export interface StepModuleSettings {
  timeoutMs: number;
  lifecycleRounds: number;
  autoPauseTimeoutMs: number;
}

/** A module setting a step refuses: the field (under the module) and what was expected. */
export interface StepProblem {
  field: string;
  message: string;
  input: unknown;
}

/** What a step needs to run; checked once, where the config is parsed. */
export interface StepNeeds {
  /** Steps the module must list with it, and why (shown in the config error). */
  steps?: { names: readonly string[]; why: string };
  /**
   * A platform capability create asks for (`ask`): a platform that does not grant it skips the
   * step, which is unsupported there, not failed.
   */
  capability?: {
    name: string;
    ask(control: ProbeControl, run: ProbeRun): ProbeControl;
    granted(run: ProbeRun): boolean;
  };
}

/** What a running step may do: run its phases within their limits and keep round times. */
export interface StepContext<P extends string> {
  readonly run: ProbeRun;
  /**
   * Runs phases in order, each within its limit and what is left of the probe's total, until
   * one fails (its failure is returned). `round`: the round whose times they join.
   */
  phases(
    list: readonly (readonly [P, PhaseFn])[],
    round?: PhaseTimes,
  ): Promise<StepFailure | undefined>;
  /**
   * Runs a preparation under a phase's name and limits, neither announced nor timed; a failure's
   * message starts with `before` ("before the first pause").
   */
  setup(phase: P, fn: PhaseFn, before: string): Promise<StepFailure | undefined>;
  /** Starts the times of one more round (ProbeResult.rounds, in the order rounds start). */
  round(): PhaseTimes;
}

/** One optional step of a probe (create and terminate always run, around the steps). */
export interface ProbeStepDef<N extends string = string, P extends string = string> {
  name: N;
  /** What it checks, in a line. */
  description: string;
  /** Its phases, in the order they run: the `phase` label values it adds. */
  phases: readonly P[];
  /** The check reasons its phases fail with, besides the transport ones every phase has. */
  reasons: readonly FailureReason[];
  needs?: StepNeeds;
  /** Asks create for what the step uses that is no capability (restricted traffic). */
  create?(control: ProbeControl, run: ProbeRun): ProbeControl;
  /** A phase's limit when phaseTimeouts sets none, from the module's phase timeout. */
  limits?: Partial<Record<P, (run: ProbeRun, phaseTimeoutMs: number) => number>>;
  /** Rules across the module's settings that hold when the step is listed. */
  check?(module: StepModuleSettings): StepProblem[];
  /** Runs the step after create; its first failure, if any (the probe then terminates). */
  run(ctx: StepContext<P>): Promise<StepFailure | undefined>;
}

/** Any step, whatever its names. */
export type AnyStep = ProbeStepDef<string, string>;

/**
 * Declares a step; its name and phase names are kept as literal types (the registry's types are
 * inferred from them). A function of the step that reads `run.settings.steps` needs its return
 * type written out, or TypeScript meets the registry while inferring it.
 */
export function defineStep<const N extends string, const P extends string>(
  step: ProbeStepDef<N, P>,
): ProbeStepDef<N, P> {
  return step;
}
