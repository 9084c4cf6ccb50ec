import { describe, expect, it } from "vitest";
import { intervalOf } from "../../src/util/duration.js";
import { startSchedule } from "../../src/util/schedule.js";

describe("startSchedule", () => {
  it("skips and counts a trigger that finds the previous run still going", async () => {
    let release: () => void = () => {};
    let runs = 0;
    let skips = 0;
    const schedule = startSchedule(
      "1h",
      intervalOf,
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

  it("reports a failed run and keeps scheduling", async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const schedule = startSchedule(
      "*/30 * * * * *",
      intervalOf,
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
