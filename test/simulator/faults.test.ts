import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { getJson, PREFIX } from "./helpers.js";

describe("fault injection", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 300 });
  });
  afterEach(() => sim.faults.clear());
  afterAll(() => sim.close());

  it("answers a route with the injected status and leaves other routes alone", async () => {
    sim.faults.route("GET /nodes", { status: 503 });
    const res = await getJson(sim, "/nodes");
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({ code: 503 });
    expect((await getJson(sim, "/templates")).status).toBe(200);
    expect(sim.counters.get("GET /nodes")).toBe(1);
  });

  it("fails a deterministic share of requests at an error rate", async () => {
    const run = async () => {
      sim.faults.clear();
      sim.faults.route("GET /health", { errorRate: 0.3, status: 502 });
      const codes: number[] = [];
      for (let i = 0; i < 100; i++) codes.push((await getJson(sim, "/health")).status);
      return codes;
    };
    const first = await run();
    const failures = first.filter((c) => c === 502).length;
    expect(failures).toBeGreaterThan(15);
    expect(failures).toBeLessThan(45);
    expect(await run()).toEqual(first);
  });

  it("returns a body that is not JSON when malformed", async () => {
    sim.faults.route("GET /v2/sandboxes", { malformed: true });
    const res = await getJson(sim, "/v2/sandboxes");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    expect(() => JSON.parse(res.text)).toThrow();
  });

  it("delays a route by the injected latency", async () => {
    sim.faults.route("GET /cluster/overview", { latencyMs: 80 });
    const t0 = performance.now();
    expect((await getJson(sim, "/cluster/overview")).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(79);
  });

  it("repeats the same next token on every page", async () => {
    sim.faults.repeatNextToken = true;
    const first = await getJson(sim, "/v2/sandboxes?limit=10");
    const token = first.headers["x-next-token"] as string;
    expect(token).toBeTruthy();
    const second = await getJson(sim, `/v2/sandboxes?limit=10&nextToken=${token}`);
    expect(second.headers["x-next-token"]).toBe(token);
    expect((second.json as unknown[]).length).toBe(10);
  });

  it("returns empty pages that still carry a token", async () => {
    sim.faults.emptyPageWithToken = true;
    const res = await getJson(sim, "/v2/sandboxes");
    expect(res.json).toEqual([]);
    expect(res.headers["x-next-token"]).toBeTruthy();
  });

  it("reports health down, and fails creates and deletes with the given status", async () => {
    sim.faults.healthDown = true;
    expect((await getJson(sim, "/health")).status).toBe(503);
    sim.faults.createFails = 500;
    const create = await request(`${sim.apiUrl}/sandboxes`, {
      method: "POST",
      body: '{"templateID":"base"}',
    });
    await create.body.dump();
    expect(create.statusCode).toBe(500);
    sim.faults.deleteFails = 502;
    const id = sim.state.sortedIds()[0]!;
    const del = await request(`${sim.apiUrl}${PREFIX}/sandboxes/${id}`, { method: "DELETE" });
    await del.body.dump();
    expect(del.statusCode).toBe(502);
    expect(sim.state.sandboxes.has(id)).toBe(true);
  });

  it("clears every fault", async () => {
    sim.faults.route("GET /health", { status: 500 });
    sim.faults.healthDown = true;
    sim.faults.stream.truncate = true;
    sim.faults.clear();
    expect((await getJson(sim, "/health")).status).toBe(200);
    expect(sim.faults.stream).toEqual({});
  });
});
