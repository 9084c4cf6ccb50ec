// One team's way into the shared request budget (several teams): the team's Retry-After holds are
// its own, and at most one of its requests per caller waits in the shared queue at a time, so the
// queue serves the waiting teams in turn. A team with a 50,000-sandbox walk then takes one token
// while each other waiting team takes one, never a run of them; alone, it takes every token.
import { type Ask, CALLERS, type Caller, type RequestBudget, RequestLimiter } from "./limiter.js";

/** Far above any real budget: the team's own limiter only keeps holds, never a rate. */
const HOLDS_ONLY_RATE = 1e9;

/** Settings of a team's lane. */
export interface TeamLaneOptions {
  /** The budget every team and the cluster reads share. */
  shared: RequestBudget;
  /** Monotonic milliseconds (as the shared limiter's). */
  now: () => number;
  /** Waits `ms` (tests pass one that moves a fake clock). */
  sleep?: (ms: number) => Promise<void>;
}

/** A team's lane: its holds, then one waiting request per caller in the shared budget. */
export class TeamLane implements RequestBudget {
  /** The team's holds: a limiter whose rate never binds, so only its Retry-After rules apply. */
  private readonly holds: RequestLimiter;
  /** The tail of each caller's line: the next ask enters the shared queue after it is granted. */
  private readonly tails: Record<Caller, Promise<void>>;

  constructor(private readonly o: TeamLaneOptions) {
    this.holds = new RequestLimiter({
      ratePerSecond: HOLDS_ONLY_RATE,
      burst: HOLDS_ONLY_RATE,
      now: o.now,
      ...(o.sleep ? { sleep: o.sleep } : {}),
    });
    this.tails = Object.fromEntries(CALLERS.map((c) => [c, Promise.resolve()])) as Record<
      Caller,
      Promise<void>
    >;
  }

  /**
   * Waits out the team's holds of `ask.endpoint` (rejecting as the shared limiter would past
   * `maxHoldWaitMs`), then its turn in line, then a shared token.
   */
  async acquire(caller: Caller, ask: Ask = {}): Promise<void> {
    await this.holds.acquire(caller, ask);
    const shared: Ask = {
      ...(ask.reserve ? { reserve: true } : {}),
      ...(ask.background ? { background: true } : {}),
    };
    const before = this.tails[caller];
    const turn = before.then(() => this.o.shared.acquire(caller, shared));
    // The next ask of this caller waits for this grant (granted or failed), never longer.
    this.tails[caller] = turn.catch(() => undefined);
    await turn;
  }

  /** A Retry-After of this team's: holds the team's endpoint, or all of the team's calls. */
  holdOff(ms: number, endpoint?: string): void {
    this.holds.holdOff(ms, endpoint);
  }
}
