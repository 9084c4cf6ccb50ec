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

/** Starts `task` on `spec`; ticks that find the previous run still going call `onSkip` instead. */
export function startSchedule(
  spec: string,
  parseInterval: IntervalParser,
  task: () => Promise<void>,
  onSkip: () => void,
  onError: (err: unknown) => void,
): Schedule {
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
  const intervalMs = parseInterval(spec);
  // croner counts intervals in whole seconds; a duration schedule ticks every second and
  // croner's `interval` spaces the runs.
  const job =
    intervalMs === undefined
      ? new Cron(spec, { unref: false }, () => {
          void run();
        })
      : new Cron(
          "* * * * * *",
          { interval: Math.max(1, Math.round(intervalMs / 1000)), unref: false },
          () => {
            void run();
          },
        );
  return {
    trigger: run,
    async stop() {
      job.stop();
      await inFlight;
    },
  };
}
