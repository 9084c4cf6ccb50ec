// The registry of probe steps, in the order they run between create and terminate. A new step is
// one folder in steps/ and one line here; the config's step names, its checks of what a step needs,
// the phase names and the runner's order all come from this list.
import type { AnyStep } from "./step.js";
import { autoPauseStep } from "./steps/autopause/autopause-step.js";
import { autoResumeStep } from "./steps/autoresume/autoresume-step.js";
import { execStep } from "./steps/exec/exec-step.js";
import { fileStep } from "./steps/file/file-step.js";
import { httpStep } from "./steps/http/http-step.js";
import { lifecycleStep } from "./steps/lifecycle/lifecycle-step.js";

/** Every optional step, in run order: a module lists the ones it runs, in any order. */
export const PROBE_STEPS = [
  autoPauseStep,
  execStep,
  fileStep,
  httpStep,
  autoResumeStep,
  lifecycleStep,
] as const;

/** A list of steps in run order (the registry, or a test's own). */
export type StepRegistry = readonly AnyStep[];

/** The name of a registered step. */
export type ProbeStep = (typeof PROBE_STEPS)[number]["name"];

/** The phases of a probe: create, each step's phases in run order, terminate. */
export type ProbePhase = "create" | (typeof PROBE_STEPS)[number]["phases"][number] | "terminate";

/** The step names of `steps`, in run order. */
export function stepNames(steps: StepRegistry): string[] {
  return steps.map((s) => s.name);
}

/** The phase names of a probe with `steps`, in run order. */
export function phaseNames(steps: StepRegistry): string[] {
  return ["create", ...steps.flatMap((s) => s.phases), "terminate"];
}

/** The phases of a probe in the order they run; each may have a timeout of its own (`phaseTimeouts`). */
export const PROBE_PHASES = phaseNames(PROBE_STEPS) as ProbePhase[];
