// One log line per reason and interval, however often a caller (an unauthenticated one too) makes
// the reason happen: the lines held back in between are counted, and the next line carries that count.

/** What `warn` and `take` write to. */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

/** Settings of a limiter. */
export interface LogLimiterOptions {
  /** Least time between two lines of the same reason. */
  intervalMs: number;
  /** Milliseconds on any monotonic or wall clock (injected). */
  now: () => number;
}

/**
 * Rate-limits log lines by reason. Reasons are a fixed set named by the code (never a value a
 * caller sends), so the memory is bounded by the code, not by the traffic.
 */
export class LogLimiter {
  readonly #o: LogLimiterOptions;
  readonly #reasons = new Map<string, { at: number; suppressed: number }>();

  constructor(o: LogLimiterOptions) {
    this.#o = o;
  }

  /**
   * Whether a line of `reason` may be written now: undefined (counted as held back) while the
   * interval since its last line runs; otherwise how many were held back since that line.
   */
  take(reason: string): { suppressed: number } | undefined {
    const now = this.#o.now();
    const entry = this.#reasons.get(reason);
    if (entry && now - entry.at < this.#o.intervalMs) {
      entry.suppressed++;
      return undefined;
    }
    this.#reasons.set(reason, { at: now, suppressed: 0 });
    return { suppressed: entry?.suppressed ?? 0 };
  }

  /** Writes `msg` at warn unless `reason` had its line this interval; adds `suppressed` when some were. */
  warn(log: WarnLogger, reason: string, obj: object, msg: string): void {
    const grant = this.take(reason);
    if (!grant) return;
    log.warn(grant.suppressed > 0 ? { ...obj, suppressed: grant.suppressed } : obj, msg);
  }
}
