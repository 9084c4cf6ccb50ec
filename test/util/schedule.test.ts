import { describe, expect, it } from "vitest";
import {
  isScheduleSpec,
  parseSchedule,
  ScheduleError,
  startSchedule,
  tickInterval,
} from "../../src/util/schedule.js";

describe("parseSchedule", () => {
  it("reads an interval of whole seconds, keeping the text as written", () => {
    expect(parseSchedule("15s")).toEqual({ kind: "interval", ms: 15_000, text: "15s" });
    expect(parseSchedule("1h30m")).toEqual({ kind: "interval", ms: 5_400_000, text: "1h30m" });
    expect(parseSchedule("60000")).toEqual({ kind: "interval", ms: 60_000, text: "60000" });
  });

  it("reads a cron expression with seconds", () => {
    expect(parseSchedule("*/15 * * * * *")).toEqual({ kind: "cron", text: "*/15 * * * * *" });
  });

  it.each([
    ["500ms", "intervals from 1s to 24d"],
    ["1500ms", "intervals from 1s to 24d"],
    ["0s", "intervals from 1s to 24d"],
    ["25d", "intervals from 1s to 24d"],
    ["61 * * * *", "CronPattern: Invalid value for minute: 61"],
    ["every minute", "CronPattern"],
  ])("refuses %j, saying why", (text, why) => {
    const err = (() => {
      try {
        parseSchedule(text);
      } catch (e) {
        return e;
      }
      throw new Error("expected a ScheduleError");
    })();
    expect(err).toBeInstanceOf(ScheduleError);
    expect((err as ScheduleError).detail).toContain(why);
    expect((err as ScheduleError).code).toBe("ERR_SCHEDULE");
  });

  it("tells a parsed schedule from a mapping", () => {
    expect(isScheduleSpec(parseSchedule("15s"))).toBe(true);
    expect(isScheduleSpec(parseSchedule("* * * * * *"))).toBe(true);
    expect(isScheduleSpec({ kind: "interval" })).toBe(false);
    expect(isScheduleSpec("15s")).toBe(false);
  });
});

describe("tickInterval", () => {
  it("is the interval itself, or the gap between a cron expression's next two runs", () => {
    expect(tickInterval(parseSchedule("15s"))).toBe(15_000);
    expect(tickInterval(parseSchedule("*/30 * * * * *"))).toBe(30_000);
    expect(tickInterval(parseSchedule("0 */5 * * * *"))).toBe(300_000);
  });
});

describe("startSchedule", () => {
  it("skips and counts a trigger that finds the previous run still going", async () => {
    let release: () => void = () => {};
    let runs = 0;
    let skips = 0;
    const schedule = startSchedule(
      parseSchedule("1h"),
      () => {
        runs++;
        return new Promise<void>((r) => {
          release = r;
        });
      },
      () => skips++,
      () => {},
    );
    const first = schedule.trigger();
    const second = schedule.trigger();
    expect(runs).toBe(1);
    expect(skips).toBe(1);
    release();
    await Promise.all([first, second]);
    const third = schedule.trigger();
    release();
    await third;
    expect(runs).toBe(2);
    expect(skips).toBe(1);
    await schedule.stop();
  });

  it("holds the first tick back until firstTickAt, so a run started by hand is not skipped", async () => {
    const from = Date.now() + 60_000;
    const held = startSchedule(
      parseSchedule("5s"),
      async () => {},
      () => {},
      () => {},
      {
        firstTickAt: from,
      },
    );
    const free = startSchedule(
      parseSchedule("5s"),
      async () => {},
      () => {},
      () => {},
    );
    // croner ticks on whole seconds: the first at or after `from`, where it would be within 1 s.
    expect(held.nextTick()).toBeGreaterThanOrEqual(from);
    expect(held.nextTick()).toBeLessThanOrEqual(from + 1_000);
    expect(free.nextTick()).toBeLessThanOrEqual(Date.now() + 1_000);
    await held.stop();
    await free.stop();
  });

  it("reports a failed run and keeps scheduling", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const schedule = startSchedule(
      parseSchedule("*/30 * * * * *"),
      async () => {
        runs++;
        if (runs === 1) throw new Error("boom");
      },
      () => {},
      (e) => errors.push(e),
    );
    await schedule.trigger();
    await schedule.trigger();
    expect(runs).toBe(2);
    expect(String(errors[0])).toContain("boom");
    await schedule.stop();
  });
});
