// One request budget for the whole daemon: a token bucket in front of every call to the management
// API, handing out tokens by priority (the poll walk first, then probes, then the policy), and held
// shut for as long as the platform asks when it answers 429 or 503 with Retry-After.
import { setTimeout as sleep } from "node:timers/promises";
import { timerMs } from "../../util/duration.js";

/** Who is asking; earlier in the list is served first. */
export const CALLERS = ["poll", "probe", "policy"] as const;
export type Caller = (typeof CALLERS)[number];

/** Settings of the limiter. */
export interface LimiterOptions {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** Tokens the bucket holds: the requests that may go at once after a quiet spell. */
  burst: number;
  /** Monotonic milliseconds. */
  now: () => number;
  /** Waits `ms` (tests pass one that moves a fake clock). */
  sleep?: (ms: number) => Promise<void>;
  /** A caller got its token after waiting `ms` (0 when it did not wait). */
  onGrant?: (caller: Caller, waitedMs: number) => void;
}

interface Waiter {
  grant: () => void;
}

/** Token bucket with a queue per caller; see the file comment. */
export class RequestLimiter {
  private tokens: number;
  private refilledAt: number;
  private heldUntil = 0;
  private readonly queues: Record<Caller, Waiter[]> = { poll: [], probe: [], policy: [] };
  private pumping = false;

  constructor(private readonly o: LimiterOptions) {
    this.tokens = o.burst;
    this.refilledAt = o.now();
  }

  /** Requests waiting for a token, by caller (a gauge reads it at scrape time). */
  waiting(caller: Caller): number {
    return this.queues[caller].length;
  }

  /** Resolves when `caller` may send one request. */
  acquire(caller: Caller): Promise<void> {
    const now = this.o.now();
    this.refill(now);
    if (!this.queued() && now >= this.heldUntil && this.tokens >= 1) {
      this.tokens -= 1;
      this.o.onGrant?.(caller, 0);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.queues[caller].push({
        grant: () => {
          this.o.onGrant?.(caller, this.o.now() - now);
          resolve();
        },
      });
      void this.pump();
    });
  }

  /**
   * Nothing starts for `ms` (a 429 or 503 asked for it): every caller slows down, not only the
   * one that was refused. A later, longer hold extends it; a shorter one never cuts it.
   */
  holdOff(ms: number): void {
    this.heldUntil = Math.max(this.heldUntil, this.o.now() + ms);
  }

  private queued(): boolean {
    return CALLERS.some((c) => this.queues[c].length > 0);
  }

  private refill(now: number): void {
    const elapsed = Math.max(0, now - this.refilledAt);
    this.tokens = Math.min(this.o.burst, this.tokens + (elapsed * this.o.ratePerSecond) / 1000);
    this.refilledAt = now;
  }

  /** Grants tokens to waiters by priority until none is left; one pump at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    const pause = this.o.sleep ?? ((ms: number) => sleep(ms, undefined, { ref: false }));
    try {
      // Each pass grants one token or waits for the next; it ends when the queues are empty.
      while (this.queued()) {
        const now = this.o.now();
        this.refill(now);
        const wait = Math.max(
          this.heldUntil - now,
          this.tokens >= 1 ? 0 : ((1 - this.tokens) * 1000) / this.o.ratePerSecond,
        );
        if (wait > 0) {
          await pause(timerMs(wait));
          continue;
        }
        const caller = CALLERS.find((c) => this.queues[c].length > 0) as Caller;
        const waiter = this.queues[caller].shift() as Waiter;
        this.tokens -= 1;
        waiter.grant();
      }
    } finally {
      this.pumping = false;
    }
  }
}
