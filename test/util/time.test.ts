import { describe, expect, it } from "vitest";
import { epochMs, looksLikeIsoTime, parseIsoTime } from "../../src/util/time.js";
import { inTimeZone } from "../helpers/timezone.js";

// A zone far from UTC, so that reading a zone-less time as local time would show.
inTimeZone("America/New_York");

describe("parseIsoTime", () => {
  it("reads a time without a zone as UTC, not local time", () => {
    expect(new Date(2026, 10, 23, 12).getTimezoneOffset()).not.toBe(0);
    expect(parseIsoTime("2026-11-23T12:00:00")).toBe(Date.UTC(2026, 10, 23, 12));
    expect(parseIsoTime("2026-11-23 12:00")).toBe(Date.UTC(2026, 10, 23, 12));
    expect(parseIsoTime("2026-11-23T12:00:00.250")).toBe(Date.UTC(2026, 10, 23, 12, 0, 0, 250));
  });

  it("reads a date alone as its midnight UTC", () => {
    expect(parseIsoTime("2026-11-23")).toBe(Date.UTC(2026, 10, 23));
  });

  it("agrees with Date.parse on zoned text", () => {
    for (const iso of [
      "2026-03-01T10:00:00Z",
      "2026-03-01t10:00:00z",
      "1999-12-31T23:59:59.999-05:30",
      "2024-02-29T00:00Z",
      "2026-11-23T12:00:00+0100",
      "2026-11-23T12:00:00.123456789+01:00",
    ]) {
      expect(parseIsoTime(iso), iso).toBe(Date.parse(iso));
    }
  });

  it.each([
    "yesterday",
    "2026-13-01T00:00:00Z",
    "2026-11-23T25:00:00Z",
    "2026-11-23T12",
    "2026-11-23T12:00:00Zjunk",
    "2026-11-23T12:00:00+1",
    "2026-11-23T12:00:",
    "2026-11-23T12:00:5",
    "1795435200",
    "",
  ])("refuses %j", (text) => {
    expect(parseIsoTime(text)).toBeUndefined();
  });

  it("pre-checks date-times cheaply", () => {
    expect(looksLikeIsoTime("2026-11-23T12:00:00Z")).toBe(true);
    expect(looksLikeIsoTime("2026-11-23")).toBe(false);
    expect(looksLikeIsoTime("hello world, twenty")).toBe(false);
  });
});

describe("epochMs", () => {
  const MS = Date.UTC(2026, 10, 23, 12);
  it("tells seconds, milliseconds, microseconds and nanoseconds apart by magnitude", () => {
    expect(epochMs(MS / 1000)).toBe(MS);
    expect(epochMs(MS)).toBe(MS);
    expect(epochMs(MS * 1000)).toBe(MS);
    expect(epochMs(MS * 1_000_000)).toBe(MS);
    expect(epochMs(MS / 1000 + 0.25)).toBe(MS + 250);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])("reads %s as not set", (n) => {
    expect(epochMs(n)).toBeUndefined();
  });
});
