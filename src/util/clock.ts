/** A source of wall-clock time in epoch milliseconds; injected so tests can run on fake time. */
export interface Clock {
  now(): number;
}

/** The real clock: the only place in the codebase that reads Date.now(). */
export const systemClock: Clock = { now: () => Date.now() };

/** A manually advanced clock for tests. */
export class FakeClock implements Clock {
  constructor(private t = 0) {}
  now(): number {
    return this.t;
  }
  set(t: number): void {
    this.t = t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
