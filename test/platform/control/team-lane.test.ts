// A team's lane of the shared budget (several teams): the teams waiting are served in turn, and a
// Retry-After one team answered holds that team alone.
import { describe, expect, it } from "vitest";
import { RequestLimiter } from "../../../src/platform/control/limiter.js";
import { TeamLane } from "../../../src/platform/control/team-lane.js";

/** A shared limiter and lanes on one fake clock whose sleeps move it. */
function lanes(ratePerSecond: number, burst: number, teams: string[]) {
  let t = 0;
  const sleep = async (ms: number) => {
    // Time moves only once the caller has yielded, as with a real timer.
    await Promise.resolve();
    t += ms;
  };
  const shared = new RequestLimiter({ ratePerSecond, burst, now: () => t, sleep });
  const byTeam = new Map(teams.map((id) => [id, new TeamLane({ shared, now: () => t, sleep })]));
  const lane = (id: string) => byTeam.get(id) as TeamLane;
  return { lane, now: () => t };
}

describe("TeamLane", () => {
  it("serves a small team's requests between a big team's, not after all of them", async () => {
    const { lane } = lanes(10, 1, ["big", "small"]);
    const order: string[] = [];
    const ask = (id: string, n: number) =>
      Array.from({ length: n }, (_, i) =>
        lane(id)
          .acquire("poll")
          .then(() => order.push(`${id}${i}`)),
      );
    // The big team asks for 20 at once (a walk and its detail reads), then the small one for 2.
    const big = ask("big", 20);
    const small = ask("small", 2);
    await Promise.all([...big, ...small]);
    expect(order).toHaveLength(22);
    // In turn: the small team's two are among the first five grants, each team's in its order.
    expect(order.indexOf("small1")).toBeLessThan(5);
    expect(order.filter((o) => o.startsWith("big"))).toEqual(
      Array.from({ length: 20 }, (_, i) => `big${i}`),
    );
  });

  it("lets a team alone take every token", async () => {
    const { lane, now } = lanes(10, 5, ["a", "b"]);
    await Promise.all(Array.from({ length: 10 }, () => lane("a").acquire("poll")));
    // 5 from the burst, 5 more at 100 ms each: nothing held back for the idle team.
    expect(now()).toBe(500);
  });

  it("holds the team that answered a Retry-After, never the others", async () => {
    const { lane, now } = lanes(100, 10, ["a", "b"]);
    lane("a").holdOff(30_000, "GET /v2/sandboxes");
    lane("a").holdOff(30_000, "GET /snapshots");
    // Two endpoints held: the whole of team a waits; team b's same endpoints go at once.
    await lane("b").acquire("poll", { endpoint: "GET /v2/sandboxes" });
    await lane("b").acquire("poll", { endpoint: "GET /templates" });
    expect(now()).toBe(0);
    await expect(
      lane("a").acquire("poll", {
        endpoint: "GET /templates",
        maxHoldWaitMs: 1_000,
        onHeld: (ms) => new Error(`held ${Math.round(ms)}`),
      }),
    ).rejects.toThrow("held 30000");
    await lane("a").acquire("poll", { endpoint: "GET /v2/sandboxes" });
    expect(now()).toBe(30_000);
  });
});
