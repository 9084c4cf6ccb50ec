import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  DurationError,
  deadline,
  formatDuration,
  formatSpan,
  intervalOf,
  parseDuration,
} from "../../src/util/duration.js";

describe("parseDuration", () => {
  it.each([
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["1h30m15s", 5_415_000],
    ["250ms", 250],
    ["1m250ms", 60_250],
    ["1.5s", 1_500],
    [".5s", 500],
    ["0.1s", 100],
    ["2d", 172_800_000],
    ["1500", 1_500],
    [" 15s ", 15_000],
    ["0", 0],
    [2_000, 2_000],
  ])("reads %j as %d ms", (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each([
    "abc",
    "",
    " ",
    "5x",
    "1h30",
    "-5s",
    "5 s",
    "s",
    "1.5",
    "5S",
    "1e3",
    "99999999999999999999",
    -1,
    1.5,
    Number.NaN,
  ])("rejects %j naming the accepted forms and the input", (input) => {
    const thrown = (() => {
      try {
        parseDuration(input);
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(DurationError);
    expect((thrown as DurationError).code).toBe("ERR_DURATION");
    expect((thrown as Error).message).toBe(
      `expected a duration like 30s, 5m, 1h30m or milliseconds, got ${JSON.stringify(input)}`,
    );
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0ms"],
    [250, "250ms"],
    [1_000, "1s"],
    [1_500, "1.5s"],
    [60_000, "1m"],
    [90_000, "1m30s"],
    [3_600_000, "1h"],
    [5_400_000, "1h30m"],
    [5_415_500, "1h30m15.5s"],
    [86_400_000, "24h"],
  ])("writes %d ms as %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("writes what parseDuration reads back to the same milliseconds", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 86_400_000 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});

describe("formatSpan", () => {
  it.each([
    [450.7, undefined, false, "450ms"],
    [80_500, undefined, false, "1m20s"],
    [246_120_518, undefined, false, "68h22m"],
    // Rounded down where the comparison still shows...
    [246_120_518, 30 * 60_000, false, "68h22m"],
    [7_290_000, 7_200_000, true, "2h1m"],
    // ...as measured where rounding down would hide it.
    [7_200_500, 7_200_000, true, "2h0.5s"],
    [7_259_000, 7_200_000, true, "2h59s"],
    [1_999, 1_500, false, "1.999s"],
    // Short of its limit (a cooldown not over): rounding down keeps it short.
    [299_700, 600_000, false, "4m59s"],
  ])("writes %d ms beside the limit %s (strict %s) as %s", (ms, limit, strict, text) => {
    expect(formatSpan(ms, limit, strict)).toBe(text);
  });

  it("always shows the comparison with its limit as it held", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * 86_400_000 }),
        fc.integer({ min: 0, max: 10 * 86_400_000 }),
        fc.boolean(),
        (ms, limit, strict) => {
          const shown = parseDuration(formatSpan(ms, limit, strict));
          expect(shown).toBeLessThanOrEqual(ms);
          const held = strict ? ms > limit : ms >= limit;
          expect(strict ? shown > limit : shown >= limit).toBe(held);
        },
      ),
    );
  });
});

describe("intervalOf", () => {
  it("gives milliseconds for a duration and undefined for a cron expression", () => {
    expect(intervalOf("15s")).toBe(15_000);
    expect(intervalOf("*/15 * * * * *")).toBeUndefined();
  });
});

describe("deadline", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("aborts with a TimeoutError when its time is up, and not before", () => {
    vi.useFakeTimers();
    const d = deadline(1_000);
    vi.advanceTimersByTime(999);
    expect(d.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(d.signal.aborted).toBe(true);
    expect((d.signal.reason as Error).name).toBe("TimeoutError");
  });

  it("never fires once cleared, and lets go of its parent", () => {
    vi.useFakeTimers();
    const parent = new AbortController();
    const d = deadline(1_000, parent.signal);
    d.clear();
    vi.advanceTimersByTime(5_000);
    parent.abort(new Error("shutdown"));
    expect(d.signal.aborted).toBe(false);
  });

  it("takes its parent's reason, at once when the parent is already aborted", () => {
    const parent = new AbortController();
    const d = deadline(60_000, parent.signal);
    const reason = new Error("shutdown");
    parent.abort(reason);
    expect(d.signal.reason).toBe(reason);
    d.clear();
    const late = deadline(60_000, parent.signal);
    expect(late.signal.reason).toBe(reason);
  });
});
