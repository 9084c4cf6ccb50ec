// One request budget for the whole daemon: a token bucket in front of every call to the management
// API. Callers share it by weight (the poll walk first, never all of it), a Retry-After holds only
// the endpoint that answered it (every caller only when several endpoints are held at once), and
// health keeps a small reserve so the daemon can always tell whether the platform is up. Inventory
// reads (long lists read a share per tick) go in the background: only while no other request
// waits, never more than their own share of the rate, and leaving a token for the others.
import { setTimeout as sleep } from "node:timers/promises";
import { timerMs } from "../../util/duration.js";

/** Who is asking; earlier in the list wins a tie. */
export const CALLERS = ["poll", "probe", "policy"] as const;
export type Caller = (typeof CALLERS)[number];

/**
 * The share of the budget each caller is guaranteed while all of them wait: the walk gets most,
 * but a walk that never ends (an endless token chain) cannot starve the probes or the policy.
 */
export const SHARES: Readonly<Record<Caller, number>> = { poll: 0.7, probe: 0.2, policy: 0.1 };
/** Endpoints held at once from which every caller is held: the key's whole budget is spent. */
const SEVERAL_HELD = 2;
/** Health's reserve: tokens per second, and how many it holds. */
const RESERVE_RATE_PER_S = 0.5;
const RESERVE_BURST = 2;
/**
 * Background (inventory) reads: at most this share of the rate, in a bucket of this many; an
 * endless list can never hold more than that, and the walk never waits behind one.
 */
export const BACKGROUND_SHARE = 0.2;
const BACKGROUND_BURST = 2;

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

/** What one request asks of the limiter besides a token. */
export interface Ask {
  /** Route template of the request: a Retry-After it answered holds this endpoint. */
  endpoint?: string;
  /** May use health's reserve when the shared budget is spent or held (GET /health only). */
  reserve?: boolean;
  /**
   * Longest this request waits for a hold (its endpoint's, or every caller's); past it, acquire
   * rejects with `onHeld`'s error at once instead of waiting. Default: waits out any hold.
   */
  maxHoldWaitMs?: number;
  /** The error to reject with when the hold is longer than maxHoldWaitMs (ms remaining). */
  onHeld?: (remainingMs: number) => Error;
  /**
   * An inventory read: granted only while no other request waits for a token and one is left
   * for them, within BACKGROUND_SHARE of the rate; it is what waits, never the walk.
   */
  background?: boolean;
}

/** What a transport asks of a request budget: the shared limiter, or a team's lane of it. */
export interface RequestBudget {
  acquire(caller: Caller, ask?: Ask): Promise<void>;
  holdOff(ms: number, endpoint?: string): void;
}

interface Waiter {
  grant: () => void;
}

/** Token bucket with a queue per caller, weighted shares and per-endpoint holds; see the file comment. */
export class RequestLimiter implements RequestBudget {
  private tokens: number;
  private refilledAt: number;
  private reserveTokens = RESERVE_BURST;
  private backgroundTokens = BACKGROUND_BURST;
  /** Background asks waiting, in order, with their caller. */
  private readonly background: Array<Waiter & { caller: Caller }> = [];
  private backgroundPumping = false;
  private heldUntil = 0;
  /** Endpoint -> monotonic ms until which it is held (a Retry-After it answered). */
  private readonly holds = new Map<string, number>();
  private readonly queues: Record<Caller, Waiter[]> = { poll: [], probe: [], policy: [] };
  /** Requests waiting for their endpoint's hold to end, by caller. */
  private readonly held: Record<Caller, number> = { poll: 0, probe: 0, policy: 0 };
  /** Virtual time of each caller: grants so far divided by its share; the lowest goes next. */
  private readonly pass: Record<Caller, number> = { poll: 0, probe: 0, policy: 0 };
  private pumping = false;

  constructor(private readonly o: LimiterOptions) {
    this.tokens = o.burst;
    this.refilledAt = o.now();
  }

  /** Requests waiting for a token or for their endpoint's hold, by caller (read at scrape time). */
  waiting(caller: Caller): number {
    let background = 0;
    for (const w of this.background) if (w.caller === caller) background++;
    return this.queues[caller].length + this.held[caller] + background;
  }

  /** Monotonic ms until which every caller is held (0 or in the past when none is). */
  get holdingAllUntil(): number {
    return this.heldUntil;
  }

  /** Ms until `endpoint` may be asked again: its own hold or every caller's, whichever is longer. */
  heldFor(endpoint?: string): number {
    const now = this.o.now();
    const own = endpoint === undefined ? 0 : (this.holds.get(endpoint) ?? 0);
    return Math.max(0, own - now, this.heldUntil - now);
  }

  /**
   * Resolves when `caller` may send one request; rejects at once when a hold is longer than the
   * ask's maxHoldWaitMs (health's reserve ignores every caller's hold, never its own).
   */
  async acquire(caller: Caller, ask: Ask = {}): Promise<void> {
    const since = this.o.now();
    if (ask.maxHoldWaitMs !== undefined) {
      const own = ask.endpoint === undefined ? 0 : (this.holds.get(ask.endpoint) ?? 0) - since;
      const all = ask.reserve && this.reserveTokens >= 1 ? 0 : this.heldUntil - since;
      const remaining = Math.max(0, own, all);
      if (remaining > ask.maxHoldWaitMs)
        throw ask.onHeld?.(remaining) ?? new Error(`held for ${Math.ceil(remaining)} ms`);
    }
    if (ask.endpoint !== undefined) await this.endpointHold(caller, ask.endpoint);
    if (ask.background) return this.acquireBackground(caller, since);
    const now = this.o.now();
    this.refill(now);
    if (!this.queued() && now >= this.heldUntil && this.tokens >= 1) {
      this.tokens -= 1;
      this.charge(caller);
      this.o.onGrant?.(caller, now - since);
      return;
    }
    if (ask.reserve && this.reserveTokens >= 1) {
      this.reserveTokens -= 1;
      this.o.onGrant?.(caller, now - since);
      return;
    }
    await new Promise<void>((resolve) => {
      if (this.queues[caller].length === 0) this.activate(caller);
      this.queues[caller].push({
        grant: () => {
          this.o.onGrant?.(caller, this.o.now() - since);
          resolve();
        },
      });
      void this.pump();
    });
  }

  /** A background ask: queued behind every other request (see Ask.background). */
  private async acquireBackground(caller: Caller, since: number): Promise<void> {
    if (this.background.length === 0 && this.backgroundMayGo(this.o.now())) {
      this.takeBackground();
      this.o.onGrant?.(caller, this.o.now() - since);
      return;
    }
    await new Promise<void>((resolve) => {
      this.background.push({
        caller,
        grant: () => {
          this.o.onGrant?.(caller, this.o.now() - since);
          resolve();
        },
      });
      void this.pumpBackground();
    });
  }

  /** Whether a background read may take a token now (refills first). */
  private backgroundMayGo(now: number): boolean {
    this.refill(now);
    // One token stays for the others (when the bucket holds more than one).
    const keep = Math.min(1, this.o.burst - 1);
    return (
      !this.queued() &&
      now >= this.heldUntil &&
      this.tokens >= 1 + keep &&
      this.backgroundTokens >= 1
    );
  }

  private takeBackground(): void {
    this.tokens -= 1;
    this.backgroundTokens -= 1;
  }

  /**
   * Grants background asks one at a time whenever they may go; sleeps a token's time between
   * checks, so a request of another caller arriving meanwhile goes first (it never waits on this).
   */
  private async pumpBackground(): Promise<void> {
    if (this.backgroundPumping) return;
    this.backgroundPumping = true;
    try {
      // Each pass grants one ask or waits about one token's time; it ends when none is left.
      while (this.background.length > 0) {
        const now = this.o.now();
        if (!this.backgroundMayGo(now)) {
          const own =
            ((1 - this.backgroundTokens) * 1000) / (this.o.ratePerSecond * BACKGROUND_SHARE);
          await this.pause(Math.max(1000 / this.o.ratePerSecond, own, this.heldUntil - now));
          continue;
        }
        this.takeBackground();
        (this.background.shift() as Waiter).grant();
      }
    } finally {
      this.backgroundPumping = false;
    }
  }

  /**
   * `endpoint` answered 429 or 503 with Retry-After: nothing starts on it for `ms`. Without an
   * endpoint, or once several endpoints are held at once, every caller waits (until the earliest
   * of those holds ends). A later, longer hold extends one; a shorter one never cuts it.
   */
  holdOff(ms: number, endpoint?: string): void {
    const now = this.o.now();
    const until = now + ms;
    if (endpoint === undefined) {
      this.heldUntil = Math.max(this.heldUntil, until);
      return;
    }
    this.holds.set(endpoint, Math.max(this.holds.get(endpoint) ?? 0, until));
    const active: number[] = [];
    for (const [e, u] of this.holds) {
      if (u > now) active.push(u);
      else this.holds.delete(e);
    }
    if (active.length >= SEVERAL_HELD)
      this.heldUntil = Math.max(this.heldUntil, Math.min(...active));
  }

  /** Waits while `endpoint` is held; a hold extended meanwhile is waited for too. */
  private async endpointHold(caller: Caller, endpoint: string): Promise<void> {
    let until = this.holds.get(endpoint);
    if (until === undefined || until <= this.o.now()) return;
    this.held[caller]++;
    try {
      // Bounded: each pass waits until the hold's end, and holds are capped by maxRetryAfterMs.
      while (until !== undefined && until > this.o.now()) {
        await this.pause(until - this.o.now());
        until = this.holds.get(endpoint);
      }
    } finally {
      this.held[caller]--;
    }
  }

  private pause(ms: number): Promise<void> {
    return this.o.sleep
      ? this.o.sleep(ms)
      : sleep(timerMs(ms), undefined, { ref: false }).then(() => undefined);
  }

  private queued(): boolean {
    return CALLERS.some((c) => this.queues[c].length > 0);
  }

  /** A caller that starts waiting catches up with the waiting ones: idle time earns no credit. */
  private activate(caller: Caller): void {
    let least = Number.POSITIVE_INFINITY;
    for (const c of CALLERS)
      if (c !== caller && this.queues[c].length > 0) least = Math.min(least, this.pass[c]);
    if (least !== Number.POSITIVE_INFINITY) this.pass[caller] = Math.max(this.pass[caller], least);
  }

  private charge(caller: Caller): void {
    this.pass[caller] += 1 / SHARES[caller];
  }

  /** The waiting caller furthest behind its share; a tie goes to the earlier in CALLERS. */
  private next(): Caller {
    let best: Caller | undefined;
    for (const c of CALLERS)
      if (this.queues[c].length > 0 && (best === undefined || this.pass[c] < this.pass[best]))
        best = c;
    return best as Caller;
  }

  private refill(now: number): void {
    const elapsed = Math.max(0, now - this.refilledAt);
    this.tokens = Math.min(this.o.burst, this.tokens + (elapsed * this.o.ratePerSecond) / 1000);
    this.reserveTokens = Math.min(
      RESERVE_BURST,
      this.reserveTokens + (elapsed * RESERVE_RATE_PER_S) / 1000,
    );
    this.backgroundTokens = Math.min(
      BACKGROUND_BURST,
      this.backgroundTokens + (elapsed * this.o.ratePerSecond * BACKGROUND_SHARE) / 1000,
    );
    this.refilledAt = now;
  }

  /** Grants tokens to waiters by share until none is left; one pump at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
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
          await this.pause(wait);
          continue;
        }
        const caller = this.next();
        const waiter = this.queues[caller].shift() as Waiter;
        this.tokens -= 1;
        this.charge(caller);
        waiter.grant();
      }
    } finally {
      this.pumping = false;
    }
  }
}
