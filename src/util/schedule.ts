// Runs a task on a croner schedule (an interval like "15s" or a cron expression), never overlapping.
import { Cron } from "croner";

/** A running schedule. */
export interface Schedule {
  /** Runs the task now unless a run is in flight (then the skip is counted). */
  trigger(): Promise<void>;
  /** Stops future runs; resolves when the run in flight, if any, has finished. */
  stop(): Promise<void>;
}

/** Interval in ms when `spec` is a duration, undefined when it is a cron expression. */
export type IntervalParser = (spec: string) => number | undefined;

/**
 * Starts `task` on `spec` (no timer when `spec` is undefined: runs happen only on trigger);
 * ticks that find the previous run still going call `onSkip` instead.
 */
export function startSchedule(
  spec: string | undefined,
  parseInterval: IntervalParser,
  task: () => Promise<void>,
  onSkip: () => void,
  onError: (err: unknown) => void,
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
  const job = spec === undefined ? undefined : cronFor(spec, parseInterval(spec), run);
  return {
    trigger: run,
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
export function tickInterval(spec: string, parseInterval: IntervalParser): number {
  const ms = parseInterval(spec);
  if (ms !== undefined) return ms;
  const [a, b] = new Cron(spec, { paused: true }).nextRuns(2);
  return a && b ? b.getTime() - a.getTime() : 60_000;
}

/** A croner job for a cron expression, or for an interval (croner counts those in whole seconds). */
function cronFor(spec: string, intervalMs: number | undefined, run: () => Promise<void>): Cron {
  const tick = (): void => {
    void run();
  };
  return intervalMs === undefined
    ? new Cron(spec, { unref: false }, tick)
    : new Cron(
        "* * * * * *",
        { interval: Math.max(1, Math.round(intervalMs / 1000)), unref: false },
        tick,
      );
}
