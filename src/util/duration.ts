// Durations as operators write them: "30s", "5m", "1h30m", "250ms", or plain milliseconds.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/** Parses a duration to milliseconds; throws a message naming what was expected. */
export function parseDuration(input: string | number): number {
  if (typeof input === "number") {
    if (Number.isFinite(input) && input >= 0) return input;
    throw new Error(`expected a non-negative duration, got ${input}`);
  }
  const text = input.trim();
  if (/^\d+$/.test(text)) return Number(text);
  let total = 0;
  PART.lastIndex = 0;
  let matched = 0;
  while (PART.lastIndex < text.length) {
    const m = PART.exec(text);
    if (!m) break;
    total += Number(m[1]) * (UNIT_MS[m[2] as string] ?? 0);
    matched = PART.lastIndex;
  }
  if (text === "" || matched !== text.length) {
    throw new Error(`expected a duration like 30s, 5m, 1h30m or milliseconds, got "${input}"`);
  }
  return Math.round(total);
}

/** The interval in ms when `spec` is a duration, undefined when it is not one (e.g. a cron expression). */
export function intervalOf(spec: string): number | undefined {
  try {
    return parseDuration(spec);
  } catch {
    return undefined;
  }
}
