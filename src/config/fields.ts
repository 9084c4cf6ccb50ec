// Field schemas shared by the configuration and the policy rule file.
import { z } from "zod";
import { DURATION_FORMS, MAX_TIMER_MS, parseDuration } from "../util/duration.js";
import {
  parseSchedule,
  SCHEDULE_FORMS,
  ScheduleError,
  type ScheduleSpec,
} from "../util/schedule.js";

/** An integer in [min, max] with one message for every way it can be wrong. */
export function int(min: number, max?: number) {
  const error = max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
  const base = z.number({ error }).int({ error }).min(min, { error });
  return max === undefined ? base : base.max(max, { error });
}

export const bool = z.boolean({ error: "true or false" });
export const text = z.string({ error: "a string" });
export const list = z.array(text, { error: "a list of strings" });
/** A spend budget (cost.budget.daily, a team's dailyBudget): a finite number >= 0. */
export const budget = z
  .number({ error: "a budget: a finite number >= 0" })
  .refine((n) => Number.isFinite(n) && n >= 0, { error: "a budget: a finite number >= 0" });

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: `one of ${values.join(", ")}` });
}

/** A positive duration in ms, from "30s"-style text or a number of milliseconds. */
export function duration(max = MAX_TIMER_MS) {
  return z.unknown().transform((v, ctx): number => {
    const ms = typeof v === "string" || typeof v === "number" ? tryDuration(v) : undefined;
    if (ms === undefined || ms <= 0 || ms > max) {
      const error = `${DURATION_FORMS}, above 0 and at most ${Math.floor(max / 86_400_000)}d`;
      ctx.addIssue({ code: "custom", message: error, input: v });
      return z.NEVER;
    }
    return ms;
  });
}

function tryDuration(v: string | number): number | undefined {
  try {
    return parseDuration(v);
  } catch {
    return undefined;
  }
}

/** An interval of whole seconds ("15s") or a cron expression, parsed once into a ScheduleSpec. */
export const schedule = text.transform((spec, ctx): ScheduleSpec => {
  try {
    return parseSchedule(spec);
  } catch (err) {
    if (!(err instanceof ScheduleError)) throw err;
    ctx.addIssue({ code: "custom", message: `${SCHEDULE_FORMS} (${err.detail})`, input: spec });
    return z.NEVER;
  }
});
