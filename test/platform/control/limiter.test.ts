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

  it("holds every caller when the hold names no endpoint, and never cuts a longer hold short", async () => {
    const { l, grants, now } = limiter(100, 5);
    l.holdOff(3_000);
    await Promise.all([l.acquire("poll"), l.acquire("policy")]);
    expect(now()).toBe(3_000);
    expect(grants).toEqual([
      ["poll", 3_000],
      ["policy", 3_000],
    ]);
    l.holdOff(5_000);
    l.holdOff(1_000);
    await l.acquire("probe");
    expect(now()).toBe(8_000);
  });

  it("holds only the endpoint a Retry-After came from: the others go at once", async () => {
    const { l, grants, now } = limiter(100, 5);
    l.holdOff(60_000, "/sandboxes/metrics");
    await l.acquire("poll", { endpoint: "/health" });
    await l.acquire("probe", { endpoint: "/sandboxes" });
    expect(now()).toBe(0);
    expect(l.heldFor("/sandboxes/metrics")).toBe(60_000);
    expect(l.heldFor("/health")).toBe(0);
    await l.acquire("poll", { endpoint: "/sandboxes/metrics" });
    expect(now()).toBe(60_000);
    expect(grants.map(([c, w]) => `${c}:${w}`)).toEqual(["poll:0", "probe:0", "poll:60000"]);
  });

  it("holds every caller once two endpoints are held at once, until the earlier hold ends", async () => {
    const { l, now } = limiter(100, 5);
    l.holdOff(10_000, "/nodes");
    expect(l.heldFor("/templates")).toBe(0);
    l.holdOff(4_000, "/cluster/overview");
    expect(l.heldFor("/templates")).toBe(4_000);
    await l.acquire("policy", { endpoint: "/v2/sandboxes/{id}/logs" });
    expect(now()).toBe(4_000);
  });

  it("rejects at once, with the caller's error, a request whose hold is longer than it may wait", async () => {
    const { l, now } = limiter(100, 5);
    l.holdOff(30_000, "/cluster/overview");
    const ask = {
      endpoint: "/cluster/overview",
      maxHoldWaitMs: 10_000,
      onHeld: (ms: number) => new Error(`held ${ms}`),
    };
    await expect(l.acquire("poll", ask)).rejects.toThrow("held 30000");
    expect(now()).toBe(0);
    // A hold within the bound is waited out.
    l.holdOff(5_000, "/nodes");
    await l.acquire("poll", { ...ask, endpoint: "/nodes" });
    expect(now()).toBe(5_000);
  });

  it("keeps a reserve for health: it is answered while every caller is held", async () => {
    const { l, now } = limiter(100, 5);
    l.holdOff(60_000);
    const bound = { maxHoldWaitMs: 1_000, onHeld: () => new Error("held") };
    await l.acquire("poll", { endpoint: "/health", reserve: true, ...bound });
    await l.acquire("poll", { endpoint: "/health", reserve: true, ...bound });
    expect(now()).toBe(0);
    // The reserve is small (two requests, then one every 2 s): a third waits like anyone.
    await expect(
      l.acquire("poll", { endpoint: "/health", reserve: true, ...bound }),
    ).rejects.toThrow("held");
    // Its own endpoint's hold still applies.
    const { l: l2 } = limiter(100, 5);
    l2.holdOff(30_000, "/health");
    await expect(
      l2.acquire("poll", { endpoint: "/health", reserve: true, ...bound }),
    ).rejects.toThrow("held");
  });

  it("gives every caller its share while all wait: an endless walk never starves the probes", async () => {
    const { l, grants } = limiter(10, 1);
    await l.acquire("poll"); // spends the only token: everything below queues
    const asks: Array<Promise<void>> = [];
    for (let i = 0; i < 70; i++) asks.push(l.acquire("poll"));
    for (let i = 0; i < 20; i++) asks.push(l.acquire("probe"));
    for (let i = 0; i < 10; i++) asks.push(l.acquire("policy"));
    await Promise.all(asks);
    const first20 = grants.slice(1, 21).map(([c]) => c);
    const count = (c: Caller) => first20.filter((x) => x === c).length;
    // Shares 0.7 / 0.2 / 0.1: strict priority would have served 20 polls first.
    expect([count("poll"), count("probe"), count("policy")]).toEqual([14, 4, 2]);
    expect(first20[0]).toBe("poll");
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
