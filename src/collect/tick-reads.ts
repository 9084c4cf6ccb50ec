// The tick collectors' reads: at most one in flight per collector, each bounded by its own deadline,
// and each outcome kept until a snapshot carries it. One slow collector holds back no other.
import type { Clock } from "../util/clock.js";
import { deadline } from "../util/duration.js";
import { errorSummary } from "../util/errors.js";
import type { Capabilities } from "./capabilities.js";
import {
  attempt,
  CollectorDeadlineError,
  failure,
  type Outcome,
  type TickCollector,
  type TickContext,
} from "./collector.js";
import type { TickData, TickName } from "./snapshot.js";

/** What the reads need. */
export interface TickReadsOptions {
  ctx: TickContext;
  clock: Clock;
  capabilities: Capabilities;
  /** How long one read may take before it counts as failed (one poll interval). */
  deadlineMs: number;
  /** An outcome was recorded (a read ended, or ran past its deadline): a snapshot should carry it. */
  onOutcome: () => Promise<void>;
  /** `onOutcome` failed, or something a read calls when it ends did (a capability hook). */
  onError?: (err: unknown) => void;
}

/**
 * Starts, bounds and remembers the reads of the tick collectors. A read still running at its
 * deadline is a failed outcome (ERR_COLLECTOR_DEADLINE) from then on; it is left to end (none of
 * the reader's calls can be aborted, but a paged list asks for no page after it: ctx.signal), and
 * no second read of that collector starts meanwhile. What
 * it brings when it ends is kept as the collector's data (the events' cursor moves on), but the
 * outcome stays failed: a read that keeps missing its deadline keeps failing.
 */
export class TickReads {
  /** Reads in flight, by collector; each resolves once its outcome is recorded and handed on. */
  private readonly flights = new Map<TickName, Promise<void>>();
  private readonly outcomes: Partial<Record<TickName, Outcome<unknown>>> = {};
  /** The latest data of each collector: what its next read gets as `previous`. */
  private readonly data: Partial<TickData> = {};
  /** Collectors whose outcome no snapshot has carried yet. */
  private readonly fresh = new Set<TickName>();

  constructor(private readonly o: TickReadsOptions) {}

  /** Whether a read of `name` is still in flight (it is not started again until it ends). */
  busy(name: TickName): boolean {
    return this.flights.has(name);
  }

  /** The latest outcome of `name`, if it ever ran. */
  outcome(name: TickName): Outcome<unknown> | undefined {
    return this.outcomes[name];
  }

  /** The latest data of `name`, if any read brought some. */
  value<N extends TickName>(name: N): TickData[N] | undefined {
    return this.data[name];
  }

  /** Whether an outcome waits for a snapshot. */
  get pending(): boolean {
    return this.fresh.size > 0;
  }

  /** The collectors whose outcome is new since the last call (a snapshot now carries them). */
  takeFresh(): TickName[] {
    const out = [...this.fresh];
    this.fresh.clear();
    return out;
  }

  /** Resolves when no read is in flight. */
  async idle(): Promise<void> {
    while (this.flights.size > 0) await Promise.all(this.flights.values());
  }

  /**
   * Starts a read of `c` once `before` resolves. Resolves when its outcome is recorded: when the
   * read ends, or at its deadline, whichever comes first (so a collector waiting on this one with
   * `after` never waits past the deadline).
   */
  start(c: TickCollector, before?: Promise<void>): Promise<void> {
    const { clock, ctx, deadlineMs } = this.o;
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const run = async (): Promise<void> => {
      await before;
      const startedAt = clock.now();
      let late = false;
      const limit = deadline(deadlineMs);
      limit.signal.addEventListener(
        "abort",
        () => {
          late = true;
          const err = new CollectorDeadlineError(c.name, deadlineMs);
          this.record(c.name, failure(err, startedAt, clock.now() - startedAt));
          settle();
          void this.handOn();
        },
        { once: true },
      );
      // Whatever throws here (a capability hook, say), the collector is free for the next tick.
      try {
        // A paged list asks for no page past the deadline: a late read stops taking the budget.
        const bounded = { ...ctx, signal: limit.signal };
        const outcome = await attempt(clock, () => c.read(bounded, this.data[c.name]));
        this.record(c.name, late ? pastDeadline(c.name, outcome, deadlineMs) : outcome);
        if (c.optional) this.o.capabilities.learn(c.name, outcome);
      } finally {
        limit.clear();
        this.flights.delete(c.name);
        settle();
      }
      await this.handOn();
    };
    this.flights.set(
      c.name,
      run().catch((err: unknown) => this.o.onError?.(err)),
    );
    return settled;
  }

  private record(name: TickName, outcome: Outcome<unknown>): void {
    this.outcomes[name] = outcome;
    if (outcome.value !== undefined) Object.assign(this.data, { [name]: outcome.value });
    this.fresh.add(name);
  }

  private async handOn(): Promise<void> {
    try {
      await this.o.onOutcome();
    } catch (err) {
      this.o.onError?.(err);
    }
  }
}

/** The outcome of a read that ended after its deadline: failed, its data kept. */
function pastDeadline(
  name: TickName,
  outcome: Outcome<unknown>,
  deadlineMs: number,
): Outcome<unknown> {
  if (!outcome.ok) return outcome;
  const error = errorSummary(new CollectorDeadlineError(name, deadlineMs, outcome.durationMs));
  return { ...outcome, ok: false, error };
}
