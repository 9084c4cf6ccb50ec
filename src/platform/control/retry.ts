// Bounded, jittered exponential backoff for idempotent reads.
import { PlatformHttpError, PlatformNetworkError, PlatformTimeoutError } from "../http-errors.js";

/** Backoff settings. */
export interface Backoff {
  baseMs: number;
  capMs: number;
  /** Uniform in [0, 1); injected so tests can pin the jitter. */
  random: () => number;
}

/**
 * "Full jitter" delay before retry number `attempt` (1-based): uniform in [0, min(cap, base*2^(n-1))).
 * A Retry-After raises it to at least that long, up to `retryAfterCapMs` (default the backoff cap).
 */
export function backoffDelay(
  attempt: number,
  b: Backoff,
  retryAfterMs?: number,
  retryAfterCapMs = b.capMs,
): number {
  const ceiling = Math.min(b.capMs, b.baseMs * 2 ** Math.max(0, attempt - 1));
  const jittered = Math.floor(b.random() * ceiling);
  return retryAfterMs === undefined
    ? jittered
    : Math.min(Math.max(b.capMs, retryAfterCapMs), Math.max(jittered, retryAfterMs));
}

/** Retry-After in ms (delta seconds or an HTTP date relative to `now`); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** True for failures worth another attempt of an idempotent call: network, timeout, 429, 5xx. */
export function isRetryable(err: unknown): boolean {
  return (
    err instanceof PlatformNetworkError ||
    err instanceof PlatformTimeoutError ||
    (err instanceof PlatformHttpError && (err.status === 429 || err.status >= 500))
  );
}
