import { describe, expect, it } from "vitest";
import { parseDuration } from "../../src/util/duration.js";

describe("parseDuration", () => {
  it.each([
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["250ms", 250],
    ["1.5s", 1_500],
    ["1500", 1_500],
    [2_000, 2_000],
  ])("reads %s as %d ms", (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each(["abc", "", "5x", "1h30", "-5s"])("rejects %j naming the expected forms", (input) => {
    expect(() => parseDuration(input)).toThrow(
      /expected a duration like 30s, 5m, 1h30m or milliseconds/,
    );
  });
});
