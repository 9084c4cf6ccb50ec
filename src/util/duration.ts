// Durations as operators write them: Go-style "30s", "5m", "1h30m", "250ms", "1.5s", or plain milliseconds.
import { ExporterError } from "./errors.js";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** One "<number><unit>" part; `ms` is tried before `m` so "250ms" is not read as 250 minutes + "s". */
const PART = /(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)/y;

/** What every duration setting accepts, for error messages and --help. */
export const DURATION_FORMS = "a duration like 30s, 5m, 1h30m or milliseconds";

/** A string or number that is not a duration. */
export class DurationError extends ExporterError {
  constructor(readonly input: string | number) {
    super("ERR_DURATION", `expected ${DURATION_FORMS}, got ${JSON.stringify(input)}`);
  }
}

/** Parses a duration to whole milliseconds; throws DurationError naming the accepted forms. */
export function parseDuration(input: string | number): number {
  if (typeof input === "number") {
    if (Number.isSafeInteger(input) && input >= 0) return input;
    throw new DurationError(input);
  }
  const text = input.trim();
  if (/^\d+$/.test(text)) return checked(Number(text), input);
  let total = 0;
  let end = 0;
  PART.lastIndex = 0;
  for (let m = PART.exec(text); m !== null; m = PART.exec(text)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    end = PART.lastIndex;
  }
  if (text === "" || end !== text.length) throw new DurationError(input);
  return checked(Math.round(total), input);
}

function checked(ms: number, input: string): number {
  if (!Number.isSafeInteger(ms)) throw new DurationError(input);
  return ms;
}

/** Formats milliseconds the way parseDuration reads them back: 5400000 -> "1h30m", 1500 -> "1.5s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return String(ms);
  const whole = Math.round(ms);
  if (whole < 1000) return `${whole}ms`;
  const h = Math.floor(whole / 3_600_000);
  const m = Math.floor((whole % 3_600_000) / 60_000);
  const s = (whole % 60_000) / 1000;
  return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
}

/**
 * A measured span as a person reads it: to the minute from an hour, to the second from a second.
 * Beside the `limit` it met (`>` when `strict`, else `>=`), it stays as measured where rounding
 * down would no longer show that: `age 2h0.5s > 2h`, not `age 2h > 2h`.
 */
export function formatSpan(ms: number, limit?: number, strict = false): string {
  const unit = ms >= 3_600_000 ? 60_000 : ms >= 1_000 ? 1_000 : 1;
  const down = Math.floor(ms / unit) * unit;
  const shows = limit === undefined || ms < limit || (strict ? down > limit : down >= limit);
  return formatDuration(shows ? down : ms);
}

/** The interval in ms when `spec` is a duration, undefined when it is not one (e.g. a cron expression). */
export function intervalOf(spec: string): number | undefined {
  try {
    return parseDuration(spec);
  } catch {
    return undefined;
  }
}

/** The longest delay a Node timer honours (2^31-1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * A delay as every timer takes it: a whole number of ms in [1, MAX_TIMER_MS]. Budgets computed
 * from performance.now() are fractional, and AbortSignal.timeout rejects a fraction outright, so
 * every deadline handed to a timer, a signal or undici goes through here.
 */
export function timerMs(ms: number): number {
  if (Number.isNaN(ms)) return 1;
  return Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(ms)));
}

/** The reason a deadline fires with: AbortSignal.timeout's, so every isTimeout() check reads it. */
export function timeoutError(): DOMException {
  return new DOMException("The operation was aborted due to timeout", "TimeoutError");
}

/** A deadline that stays armed until cleared; see `deadline`. */
export interface Deadline {
  /** Aborts with a TimeoutError when the time is up, or with the parent's reason when it aborts. */
  readonly signal: AbortSignal;
  /** Disarms the timer and lets go of the parent; call it when the work ends (idempotent). */
  clear(): void;
}

/**
 * A strong deadline: a timer holding its AbortController until it fires or is cleared, chained to
 * `parent`. Unlike `AbortSignal.any([parent, AbortSignal.timeout(ms)])`, which on Node 20 holds
 * the timeout weakly and loses it to a GC, it cannot be collected while the work runs.
 */
export function deadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const clear = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    parent?.removeEventListener("abort", onParent);
  };
  const onParent = (): void => {
    clear();
    controller.abort(parent?.reason);
  };
  const fire = (): void => {
    clear();
    controller.abort(timeoutError());
  };
  if (parent?.aborted) controller.abort(parent.reason);
  else {
    // Unref'd like AbortSignal.timeout's timer: a deadline alone never holds the process open.
    timer = setTimeout(fire, timerMs(ms)).unref();
    parent?.addEventListener("abort", onParent, { once: true });
  }
  return { signal: controller.signal, clear };
}
