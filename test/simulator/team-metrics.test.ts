import { ApiClient, ConnectionConfig, RateLimitError, Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { simCall } from "../helpers/sim-call.js";
import { SDK_API_KEY, sdkOpts } from "../sdk/sdk-setup.js";

const TEAM = "460355b3-4f64-48f9-9a16-4442817f79f5";
/** E2B's text (infra api/internal/orchestrator/create_instance.go), with a limit of 3. */
const LIMIT_TEXT =
  "you have reached the maximum number of concurrent E2B sandboxes (3). If you need more, please visit 'https://e2b.dev/docs/billing'";

const call = simCall;

describe("team metrics and the concurrency limit (E2B mode)", () => {
  const t0 = Date.parse("2026-03-01T10:00:00Z");
  const s0 = t0 / 1000;
  const clock = new FakeClock(t0);
  let sim: Simulator;
  const ids: string[] = [];
  let refused: { status: number; json: { code: number; message: string } };

  async function create() {
    return call(sim, "POST", "/v2/sandboxes", { templateID: "base" });
  }

  beforeAll(async () => {
    sim = await startSimulator({ flavor: "e2b", sandboxes: 0, clock, teamConcurrencyLimit: 3 });
    // The fleet: A at 0 s, B at 2 s, C at 7 s; a fourth refused at 8 s (limit 3); B paused at
    // 9 s, A killed at 12 s.
    ids.push((await create()).json.sandboxID);
    clock.set(t0 + 2000);
    ids.push((await create()).json.sandboxID);
    clock.set(t0 + 7000);
    ids.push((await create()).json.sandboxID);
    clock.set(t0 + 8000);
    refused = await create();
    clock.set(t0 + 9000);
    expect((await call(sim, "POST", `/sandboxes/${ids[1]}/pause`)).status).toBe(204);
    clock.set(t0 + 12_000);
    expect((await call(sim, "DELETE", `/sandboxes/${ids[0]}`)).status).toBe(204);
    clock.set(t0 + 20_000);
  });
  afterAll(() => sim.close());

  it("refuses a create past the limit with E2B's 429 text, and records nothing for it", async () => {
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ code: 429, message: LIMIT_TEXT });
    expect((await call(sim, "GET", "/events/sandboxes?limit=100")).json).toHaveLength(5);
  });

  it("answers what the fleet did, bucketed by E2B's step (5 s under an hour)", async () => {
    const res = await call(sim, "GET", `/teams/${TEAM}/metrics?start=${s0}&end=${s0 + 20}`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual([
      {
        timestamp: "2026-03-01T10:00:00Z",
        timestampUnix: s0,
        concurrentSandboxes: 2,
        sandboxStartRate: 0.4,
      },
      {
        timestamp: "2026-03-01T10:00:05Z",
        timestampUnix: s0 + 5,
        concurrentSandboxes: 3,
        sandboxStartRate: 0.2,
      },
      {
        timestamp: "2026-03-01T10:00:10Z",
        timestampUnix: s0 + 10,
        concurrentSandboxes: 2,
        sandboxStartRate: 0,
      },
      {
        timestamp: "2026-03-01T10:00:15Z",
        timestampUnix: s0 + 15,
        concurrentSandboxes: 1,
        sandboxStartRate: 0,
      },
      {
        timestamp: "2026-03-01T10:00:20Z",
        timestampUnix: s0 + 20,
        concurrentSandboxes: 1,
        sandboxStartRate: 0,
      },
    ]);
  });

  it("answers the maximum of either metric and when it was reached", async () => {
    const q = `start=${s0}&end=${s0 + 20}`;
    const concurrent = await call(
      sim,
      "GET",
      `/teams/${TEAM}/metrics/max?${q}&metric=concurrent_sandboxes`,
    );
    expect(concurrent.json).toEqual({
      timestamp: "2026-03-01T10:00:07Z",
      timestampUnix: s0 + 7,
      value: 3,
    });
    const rate = await call(
      sim,
      "GET",
      `/teams/${TEAM}/metrics/max?${q}&metric=sandbox_start_rate`,
    );
    expect(rate.json).toEqual({ timestamp: "2026-03-01T10:00:00Z", timestampUnix: s0, value: 0.4 });
  });

  it("refuses another team's metrics, a reversed range and an unknown metric as E2B does", async () => {
    const other = "00000000-0000-4000-a000-000000000000";
    const forbidden = await call(sim, "GET", `/teams/${other}/metrics`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.message).toBe(
      `You (${TEAM}) are not authorized to access this team's (${other}) metrics`,
    );
    expect(
      (await call(sim, "GET", `/teams/${other}/metrics/max?metric=concurrent_sandboxes`)).status,
    ).toBe(403);
    const reversed = await call(sim, "GET", `/teams/${TEAM}/metrics?start=${s0 + 10}&end=${s0}`);
    expect(reversed).toEqual({
      status: 400,
      json: { code: 400, message: "start time cannot be after end time" },
    });
    expect((await call(sim, "GET", `/teams/${TEAM}/metrics/max?metric=cpu`)).status).toBe(400);
  });

  it("lets creates through again once sandboxes stop running (paused ones do not count)", async () => {
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(429);
  });
});

describe("a self-hosted install's team metrics", () => {
  it("answer an empty list when teamMetricsEmpty is set", async () => {
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 3, teamMetricsEmpty: true });
    try {
      const res = await call(sim, "GET", `/teams/${TEAM}/metrics`);
      expect(res).toEqual({ status: 200, json: [] });
    } finally {
      await sim.close();
    }
  });

  it("counts the generated fleet's running sandboxes from the start", async () => {
    const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 40, clock, teamId: "team-x" });
    try {
      clock.advance(1000);
      const running = [...sim.state.sandboxes.values()].filter((s) => s.state === "running").length;
      const res = await call(sim, "GET", "/teams/team-x/metrics/max?metric=concurrent_sandboxes");
      expect(res.json.value).toBe(running);
      expect(running).toBeGreaterThan(0);
    } finally {
      await sim.close();
    }
  });
});

describe("the E2B SDK against the simulated team", () => {
  it("gets RateLimitError past the limit, and reads team metrics through the SDK's API client", async () => {
    const sim = await startSimulator({
      flavor: "e2b",
      sandboxes: 0,
      apiKey: SDK_API_KEY,
      teamConcurrencyLimit: 1,
    });
    try {
      const opts = sdkOpts(sim);
      const sbx = await Sandbox.create("base", opts);
      const second = Sandbox.create("base", opts);
      await expect(second).rejects.toBeInstanceOf(RateLimitError);
      await expect(second).rejects.toThrow(/maximum number of concurrent E2B sandboxes \(1\)/);
      const client = new ApiClient(new ConnectionConfig(opts));
      const max = await client.api.GET("/teams/{teamID}/metrics/max", {
        params: { path: { teamID: TEAM }, query: { metric: "concurrent_sandboxes" } },
      });
      expect(max.data?.value).toBe(1);
      const series = await client.api.GET("/teams/{teamID}/metrics", {
        params: { path: { teamID: TEAM } },
      });
      expect(series.data?.some((m) => m.concurrentSandboxes === 1)).toBe(true);
      await sbx.kill();
      expect(sim.events.all().map((e) => e.type)).toEqual([
        "sandbox.lifecycle.created",
        "sandbox.lifecycle.killed",
      ]);
    } finally {
      await sim.close();
    }
  });
});
