import { describe, expect, it } from "vitest";
import { InflightBudget } from "../../src/util/inflight-budget.js";

describe("InflightBudget", () => {
  it("admits at most maxCount and maxBytes together, and gives all back on release, once", () => {
    const budget = new InflightBudget(2, 100);
    const a = budget.enter();
    const b = budget.enter();
    expect(budget.enter()).toBeUndefined();
    expect(a?.take(60)).toBe(true);
    expect(b?.take(50)).toBe(false);
    expect(b?.take(40)).toBe(true);
    expect(budget.bytes).toBe(100);
    a?.release();
    a?.release();
    expect(a?.take(1)).toBe(false);
    expect(budget).toMatchObject({ count: 1, bytes: 40, peakCount: 2, peakBytes: 100 });
    b?.release();
    expect(budget).toMatchObject({ count: 0, bytes: 0 });
    expect(budget.enter()).toBeDefined();
  });
});
