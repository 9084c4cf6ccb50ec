import { describe, expect, it } from "vitest";
import { type Caller, RequestLimiter } from "../../../src/platform/control/limiter.js";

/** A limiter on a fake clock whose sleeps move the clock; grants and waits are recorded. */
function limiter(ratePerSecond: number, burst: number) {
  let t = 0;
  const grants: Array<[Caller, number]> = [];
  const sleeps: number[] = [];
  const l = new RequestLimiter({
    ratePerSecond,
    burst,
    now: () => t,
    sleep: async (ms) => {
      // Time moves only once the caller has yielded, as with a real timer.
      await Promise.resolve();
      sleeps.push(ms);
      t += ms;
    },
    onGrant: (caller, waited) => grants.push([caller, waited]),
  });
  return { l, grants, sleeps, now: () => t, advance: (ms: number) => (t += ms) };
}

describe("RequestLimiter", () => {
  it("lets a burst through at once, then one request per 1/rate seconds", async () => {
    const { l, grants, now } = limiter(10, 3);
    await Promise.all(Array.from({ length: 6 }, () => l.acquire("poll")));
    expect(grants.map(([, w]) => w)).toEqual([0, 0, 0, 100, 200, 300]);
    expect(now()).toBe(300);
  });

  it("serves the poll walk before probes, and probes before the policy", async () => {
    const { l, grants } = limiter(10, 1);
    await l.acquire("policy"); // spends the only token
    const order = Promise.all([l.acquire("policy"), l.acquire("probe"), l.acquire("poll")]);
    await order;
    expect(grants.slice(1).map(([c]) => c)).toEqual(["poll", "probe", "policy"]);
  });

  it("holds every caller back for as long as a Retry-After asked, not only the refused one", async () => {
    const { l, grants, now } = limiter(100, 5);
    l.holdOff(3_000);
    await Promise.all([l.acquire("poll"), l.acquire("policy")]);
    expect(now()).toBe(3_000);
    expect(grants).toEqual([
      ["poll", 3_000],
      ["policy", 3_000],
    ]);
    // A shorter hold never cuts a longer one short.
    l.holdOff(5_000);
    l.holdOff(1_000);
    await l.acquire("probe");
    expect(now()).toBe(8_000);
  });

  it("counts who is waiting, by caller", async () => {
    const { l } = limiter(1, 1);
    await l.acquire("poll");
    const pending = [l.acquire("policy"), l.acquire("policy"), l.acquire("probe")];
    expect([l.waiting("poll"), l.waiting("probe"), l.waiting("policy")]).toEqual([0, 1, 2]);
    await Promise.all(pending);
    expect(l.waiting("policy")).toBe(0);
  });
});
