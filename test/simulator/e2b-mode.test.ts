import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

const KEY = "e2b_test_key";
const ADMIN = "admin-123";

interface Listed {
  sandboxID: string;
  state: string;
  startedAt: string;
  metadata: Record<string, string>;
}

/** A request at the simulator's root, with the API key unless `headers` says otherwise. */
async function call(
  sim: Simulator,
  path: string,
  init: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: unknown } = {},
) {
  const res = await request(`${sim.apiUrl}${path}`, {
    method: init.method ?? "GET",
    headers: { "x-api-key": KEY, ...init.headers },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers,
    text,
    json: text === "" ? undefined : (JSON.parse(text) as unknown),
  };
}

/** Walks /v2/sandboxes by X-Next-Token (bounded); returns the items and each page's headers. */
async function walk(sim: Simulator, query: string) {
  const items: Listed[] = [];
  const totals: Array<string | undefined> = [];
  let token: string | undefined;
  for (let page = 0; page < 500; page++) {
    const q = new URLSearchParams(query);
    if (token) q.set("nextToken", token);
    const res = await call(sim, `/v2/sandboxes?${q}`);
    expect(res.status).toBe(200);
    items.push(...(res.json as Listed[]));
    totals.push(res.headers["x-total-running"] as string | undefined);
    token = res.headers["x-next-token"] as string | undefined;
    if (!token) return { items, totals };
  }
  throw new Error("walk did not end");
}

describe("E2B mode", () => {
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      flavor: "e2b",
      sandboxes: 250,
      nodes: 2,
      apiKey: KEY,
      adminToken: ADMIN,
      clock,
    });
  });
  afterAll(() => sim.close());

  it("serves E2B's routes at the root only, without a cluster overview", async () => {
    expect(sim.managementUrl).toBe(sim.apiUrl);
    expect((await call(sim, "/templates")).status).toBe(200);
    expect((await call(sim, "/sandboxapi/v1/templates")).status).toBe(404);
    const overview = await call(sim, "/cluster/overview");
    expect(overview.status).toBe(404);
    expect(overview.json).toMatchObject({ code: 404, message: expect.any(String) });
  });

  it("answers health with 204 and no body, without the API key", async () => {
    const res = await call(sim, "/health", { headers: { "x-api-key": "" } });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    sim.faults.healthDown = true;
    try {
      expect((await call(sim, "/health")).status).toBe(503);
    } finally {
      sim.faults.healthDown = false;
    }
  });

  it("serves nodes only with the admin token, and never echoes a wrong one", async () => {
    const node = sim.state.nodes[0]!.nodeID;
    for (const path of ["/nodes", `/nodes/${node}`]) {
      const none = await call(sim, path);
      expect(none.status).toBe(403);
      expect(none.json).toMatchObject({ code: 403 });
      const wrong = await call(sim, path, { headers: { "x-admin-token": "guess-456" } });
      expect(wrong.status).toBe(403);
      expect(wrong.text).not.toContain("guess-456");
      // E2B's admin routes take the admin token alone.
      const admin = await call(sim, path, { headers: { "x-admin-token": ADMIN, "x-api-key": "" } });
      expect(admin.status).toBe(200);
    }
    const list = (await call(sim, "/nodes", { headers: { "x-admin-token": ADMIN } }))
      .json as Array<{
      id: string;
      sandboxCount: number;
      metrics: { allocatedCPU: number; cpuCount: number };
    }>;
    const running = [...sim.state.sandboxes.values()].filter((s) => s.state === "running");
    expect(list.map((n) => n.id)).toEqual(sim.state.nodes.map((n) => n.nodeID));
    expect(list.reduce((n, x) => n + x.sandboxCount, 0)).toBe(running.length);
    expect(list[0]!.metrics.allocatedCPU).toBeLessThanOrEqual(list[0]!.metrics.cpuCount);
  });

  it("refuses a limit above 100 with a 400 naming the limit", async () => {
    const res = await call(sim, "/v2/sandboxes?limit=101");
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ code: 400, message: "limit must be at most 100" });
    expect((await call(sim, "/v2/sandboxes?limit=100")).status).toBe(200);
    expect((await call(sim, "/v2/sandboxes?state=starting")).status).toBe(400);
  });

  // E2B's GetV2Sandboxes: "If no state is provided we want to return both running and paused".
  it("lists running and paused sandboxes when no state is given, newest first, each once", async () => {
    const { items, totals } = await walk(sim, "limit=30");
    const all = [...sim.state.sandboxes.values()];
    const running = all.filter((s) => s.state === "running");
    const paused = all.filter((s) => s.state === "paused");
    expect(paused.length).toBeGreaterThan(0);
    expect(items.length).toBe(running.length + paused.length);
    expect(new Set(items.map((s) => s.sandboxID)).size).toBe(items.length);
    expect(items.filter((s) => s.state === "paused").length).toBe(paused.length);
    expect(items.every((s) => s.state === "running" || s.state === "paused")).toBe(true);
    for (let i = 1; i < items.length; i++) {
      expect(Date.parse(items[i - 1]!.startedAt)).toBeGreaterThanOrEqual(
        Date.parse(items[i]!.startedAt),
      );
    }
    expect(new Set(totals)).toEqual(new Set([String(running.length)]));
  });

  it("takes state as a comma list and sends X-Total-Running only when running is asked for", async () => {
    const both = await walk(sim, "state=running,paused");
    const visible = [...sim.state.sandboxes.values()].filter(
      (s) => s.state === "running" || s.state === "paused",
    );
    expect(both.items.length).toBe(visible.length);
    // Starting and killing sandboxes exist but E2B shows none of them.
    expect(visible.length).toBeLessThan(sim.state.sandboxes.size);
    const paused = await walk(sim, "state=paused");
    expect(paused.items.every((s) => s.state === "paused")).toBe(true);
    expect(paused.totals.every((t) => t === undefined)).toBe(true);
  });

  it("filters by metadata whose keys and values are URL-encoded inside the parameter", async () => {
    const a = sim.state.addSandbox({ metadata: { "team name": "a&b=c", env: "prod" } });
    sim.state.addSandbox({ metadata: { "team name": "a", env: "prod" } });
    const inner = `${encodeURIComponent("team name")}=${encodeURIComponent("a&b=c")}&env=prod`;
    const { items, totals } = await walk(sim, new URLSearchParams({ metadata: inner }).toString());
    expect(items.map((s) => s.sandboxID)).toEqual([a.sandboxID]);
    expect(totals).toEqual(["1"]);
  });

  it("hides sandboxes E2B would not show (starting, killing)", async () => {
    const s = sim.state.addSandbox({ state: "starting" });
    expect((await call(sim, `/sandboxes/${s.sandboxID}`)).status).toBe(404);
    expect((await call(sim, `/v2/sandboxes/${s.sandboxID}/logs`)).status).toBe(404);
    const connect = await call(sim, `/sandboxes/${s.sandboxID}/connect`, {
      method: "POST",
      body: { timeout: 10 },
    });
    expect(connect.status).toBe(404);
    s.state = "running";
    expect((await call(sim, `/sandboxes/${s.sandboxID}`)).status).toBe(200);
  });

  it("resumes by connect: 201 for a paused sandbox, 200 for a running one, TTL only extended", async () => {
    sim.counters.reset();
    const s = sim.state.addSandbox({ state: "paused", endAt: clock.now() + 3_600_000 });
    const path = `/sandboxes/${s.sandboxID}/connect`;
    expect((await call(sim, path, { method: "POST", body: {} })).status).toBe(400);
    const resumed = await call(sim, path, { method: "POST", body: { timeout: 60 } });
    expect(resumed.status).toBe(201);
    expect(resumed.json).toMatchObject({ sandboxID: s.sandboxID, templateID: s.templateID });
    expect(s.state).toBe("running");
    expect(s.endAt).toBe(clock.now() + 3_600_000);
    const again = await call(sim, path, { method: "POST", body: { timeout: 7_200 } });
    expect(again.status).toBe(200);
    expect(s.endAt).toBe(clock.now() + 7_200_000);
    expect(sim.counters.get("POST /sandboxes/{id}/connect")).toBe(3);
    expect(sim.counters.mutating()).toBe(3);
  });

  it("pages logs by a time cursor in E2B's entry shape", async () => {
    const s = sim.state.addSandbox({ logs: [] });
    for (let i = 0; i < 5; i++) {
      clock.advance(1_000);
      sim.state.appendLog(s.sandboxID, `line ${i}`, "warn");
    }
    const t2 = s.logs[2]!.timestamp;
    const logsOf = (query: string) => call(sim, `/v2/sandboxes/${s.sandboxID}/logs?${query}`);
    const forward = await logsOf(`direction=forward&cursor=${t2}&limit=2`);
    expect(forward.json).toEqual({
      logs: [
        { timestamp: new Date(t2).toISOString(), level: "warn", message: "line 2", fields: {} },
        {
          timestamp: new Date(t2 + 1_000).toISOString(),
          level: "warn",
          message: "line 3",
          fields: {},
        },
      ],
    });
    const messages = async (query: string) =>
      ((await logsOf(query)).json as { logs: Array<{ message: string }> }).logs.map(
        (l) => l.message,
      );
    // Backward from now is E2B's default.
    expect(await messages("limit=2")).toEqual(["line 4", "line 3"]);
    expect(await messages(`direction=backward&cursor=${t2}`)).toEqual([
      "line 2",
      "line 1",
      "line 0",
    ]);
    expect((await logsOf("limit=1001")).status).toBe(400);
  });
});

describe("E2B mode options", () => {
  it("answers 403 on every node request when no admin token is configured", async () => {
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 5 });
    try {
      const res = await request(`${sim.apiUrl}/nodes`, { headers: { "x-admin-token": "" } });
      await res.body.dump();
      expect(res.statusCode).toBe(403);
    } finally {
      await sim.close();
    }
  });

  it("refuses settings E2B does not have", async () => {
    await expect(startSimulator({ flavor: "e2b", tokenStyle: "body" })).rejects.toThrow(/header/);
    await expect(
      startSimulator({ flavor: "nope" as unknown as "e2b", sandboxes: 1 }),
    ).rejects.toThrow(/flavor/);
  });
});
