// The sandbox walk as the poller schedules it: one in flight at most, its latest outcome kept until a
// snapshot carries it, and failed walks backing off (the next tick, then doubling intervals).
import type { Clock } from "../util/clock.js";
import { attempt, type Outcome } from "./collector.js";
import type { SandboxList } from "./sandbox-table.js";
import type { SandboxWalk } from "./sandbox-walk.js";

/** What the walk runs need. */
export interface WalkRunsOptions {
  walk: SandboxWalk;
  clock: Clock;
  /** Time between two ticks: the first wait after a failure, doubled after each. */
  intervalMs: number;
  /** Ceiling of the wait between failed walks. */
  maxBackoffMs: number;
  /** A walk ended (its outcome recorded); a rejection goes to `onError`. */
  onEnd: (outcome: Outcome<SandboxList>) => Promise<void>;
  onError?: (err: unknown) => void;
}

/** Starts walks, one at a time, and remembers how the latest ended. */
export class WalkRuns {
  /** The latest outcome of the walk. */
  outcome: Outcome<SandboxList> | undefined;
  /** The walk in flight, if any; resolves once its outcome is handed on. */
  inFlight: Promise<void> | undefined;
  /** A walk ended and no snapshot has carried its outcome yet. */
  pending = false;
  private failures = 0;
  private nextAt = 0;

  constructor(private readonly o: WalkRunsOptions) {}

  /** Epoch ms before which no walk starts (failed walks back off); 0 when not backing off. */
  get backoffUntil(): number {
    return this.failures > 0 ? this.nextAt : 0;
  }

  /** Starts a walk from the last list (`previous`). */
  start(previous: SandboxList | undefined): void {
    const run = async (): Promise<void> => {
      try {
        const { clock } = this.o;
        const outcome = await attempt(clock, () => this.o.walk.read(previous));
        this.outcome = outcome;
        this.pending = true;
        if (outcome.ok) this.failures = 0;
        else {
          this.failures++;
          // The next tick after a first failure, then doubling intervals up to the ceiling.
          const { intervalMs, maxBackoffMs } = this.o;
          const wait = Math.min(maxBackoffMs, intervalMs * 2 ** Math.min(this.failures - 1, 30));
          this.nextAt = outcome.startedAt + wait - intervalMs / 2;
        }
        await this.o.onEnd(outcome);
      } catch (err) {
        this.o.onError?.(err);
      } finally {
        this.inFlight = undefined;
      }
    };
    this.inFlight = run();
  }

  /** Whether a walk ended since the last call (a snapshot now carries it). */
  take(): boolean {
    const walked = this.pending;
    this.pending = false;
    return walked;
  }
}
