// Schedules: parsed once from "15s" or a cron expression, then run on croner, never overlapping.
import { Cron } from "croner";
import { intervalOf, MAX_TIMER_MS } from "./duration.js";
import { ExporterError } from "./errors.js";

/**
 * A parsed schedule: an interval of whole seconds, or a cron expression with seconds. `text` is the
 * schedule as written (for a cron expression, the expression itself), for logs and /status.
 */
export type ScheduleSpec =
  | { kind: "interval"; ms: number; text: string }
  | { kind: "cron"; text: string };

/** What a schedule setting accepts, for error messages. */
export const SCHEDULE_FORMS =
  "an interval of whole seconds like 15s, or a cron expression like */15 * * * * *";

/** Text that is no schedule; `detail` says why (the interval's range, or croner's message). */
export class ScheduleError extends ExporterError {
  constructor(
    readonly input: string,
    readonly detail: string,
  ) {
    super("ERR_SCHEDULE", `expected ${SCHEDULE_FORMS} (${detail}), got ${JSON.stringify(input)}`);
  }
}

/** Parses a schedule; throws ScheduleError for a bad interval or cron expression. */
export function parseSchedule(text: string): ScheduleSpec {
  const ms = intervalOf(text);
  if (ms !== undefined) {
    // croner counts intervals in whole seconds.
    if (ms < 1000 || ms % 1000 !== 0 || ms > MAX_TIMER_MS)
      throw new ScheduleError(text, "intervals from 1s to 24d");
    return { kind: "interval", ms, text };
  }
  try {
    new Cron(text, { paused: true }).stop();
  } catch (err) {
    throw new ScheduleError(text, (err as Error).message);
  }
  return { kind: "cron", text };
}

/** True for a value parseSchedule made (a schedule is one value, not a mapping of settings). */
export function isScheduleSpec(v: unknown): v is ScheduleSpec {
  if (typeof v !== "object" || v === null) return false;
  const kind = (v as { kind?: unknown }).kind;
  return (
    (kind === "interval" || kind === "cron") && typeof (v as { text?: unknown }).text === "string"
  );
}

/** A running schedule. */
export interface Schedule {
  /** Runs the task now unless a run is in flight (then the skip is counted). */
  trigger(): Promise<void>;
  /** Stops future runs; resolves when the run in flight, if any, has finished. */
  stop(): Promise<void>;
  /** When the next tick is due (epoch ms); undefined without a timer. */
  nextTick(): number | undefined;
}

/**
 * Starts `task` on `spec` (no timer when `spec` is undefined: runs happen only on trigger);
 * ticks that find the previous run still going call `onSkip` instead.
 */
export function startSchedule(
  spec: ScheduleSpec | undefined,
  task: () => Promise<void>,
  onSkip: () => void,
  onError: (err: unknown) => void,
  opts: { firstTickAt?: number } = {},
): Schedule {
  // The overlap guard lives here rather than in croner's `protect`, so that manual triggers
  // (the first cycle at start-up, tests) are guarded and counted the same way as ticks.
  let inFlight: Promise<void> | undefined;
  const run = (): Promise<void> => {
    if (inFlight) {
      onSkip();
      return inFlight;
    }
    inFlight = task()
      .catch(onError)
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
  const job = spec === undefined ? undefined : cronFor(spec, run, opts.firstTickAt);
  return {
    trigger: run,
    nextTick: () => job?.nextRun()?.getTime(),
    async stop() {
      job?.stop();
      await inFlight;
    },
  };
}

/**
 * The time between two ticks of `spec`: the interval itself, or for a cron expression the gap
 * between its next two runs (what staleness and backoff are measured in).
 */
export function tickInterval(spec: ScheduleSpec): number {
  if (spec.kind === "interval") return spec.ms;
  const [a, b] = new Cron(spec.text, { paused: true }).nextRuns(2);
  return a && b ? b.getTime() - a.getTime() : 60_000;
}

/** A croner job for a cron expression, or for an interval (croner counts those in whole seconds). */
/** `firstTickAt` (epoch ms): no tick before it, e.g. one interval after a run started by hand. */
function cronFor(spec: ScheduleSpec, run: () => Promise<void>, firstTickAt?: number): Cron {
  const tick = (): void => {
    void run();
  };
  const startAt = firstTickAt === undefined ? {} : { startAt: new Date(firstTickAt) };
  return spec.kind === "cron"
    ? new Cron(spec.text, { unref: false, ...startAt }, tick)
    : new Cron(
        "* * * * * *",
        { interval: Math.max(1, Math.round(spec.ms / 1000)), unref: false, ...startAt },
        tick,
      );
}
