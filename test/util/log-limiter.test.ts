import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/util/clock.js";
import { LogLimiter } from "../../src/util/log-limiter.js";

describe("LogLimiter", () => {
  it("writes one line per reason and interval, the next one carrying the count held back", () => {
    const clock = new FakeClock(0);
    const limiter = new LogLimiter({ intervalMs: 60_000, now: () => clock.now() });
    const lines: Array<{ obj: object; msg: string }> = [];
    const log = { warn: (obj: object, msg: string) => lines.push({ obj, msg }) };
    for (let i = 0; i < 5_000; i++) limiter.warn(log, "too_large", { i }, "too large");
    limiter.warn(log, "timeout", {}, "too slow");
    expect(lines).toEqual([
      { obj: { i: 0 }, msg: "too large" },
      { obj: {}, msg: "too slow" },
    ]);
    clock.advance(59_999);
    limiter.warn(log, "too_large", { i: -1 }, "too large");
    expect(lines).toHaveLength(2);
    clock.advance(1);
    limiter.warn(log, "too_large", { i: -2 }, "too large");
    expect(lines[2]).toEqual({ obj: { i: -2, suppressed: 5_000 }, msg: "too large" });
  });
});
