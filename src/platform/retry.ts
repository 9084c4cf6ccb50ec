// Bounded, jittered exponential backoff for idempotent reads.

/** Backoff settings. */
export interface Backoff {
  baseMs: number;
  capMs: number;
  random: () => number;
}

/** "Full jitter" delay before retry number `attempt` (1-based), optionally at least `retryAfterMs`. */
export function backoffDelay(attempt: number, b: Backoff, retryAfterMs?: number): number {
  const ceiling = Math.min(b.capMs, b.baseMs * 2 ** (attempt - 1));
  const jittered = Math.floor(b.random() * ceiling);
  return retryAfterMs === undefined
    ? jittered
    : Math.min(b.capMs, Math.max(jittered, retryAfterMs));
}

/** Retry-After in ms (seconds or an HTTP date relative to `now`), undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
