import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { getJson, PREFIX } from "./helpers.js";

async function call(sim: Simulator, method: "POST" | "DELETE", path: string, body?: unknown) {
  const res = await request(`${sim.apiUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

describe("sandbox lifecycle", () => {
  const clock = new FakeClock(Date.parse("2025-06-01T12:00:00Z"));
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 50, clock });
  });
  afterAll(() => sim.close());

  function runningId(): string {
    return [...sim.state.sandboxes.values()].find((s) => s.state === "running")!.sandboxID;
  }

  it("pauses a running sandbox and refuses to pause it again with 409", async () => {
    const id = runningId();
    expect((await call(sim, "POST", `${PREFIX}/sandboxes/${id}/pause`)).status).toBe(204);
    expect(sim.state.sandboxes.get(id)!.state).toBe("paused");
    const again = await call(sim, "POST", `${PREFIX}/sandboxes/${id}/pause`);
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ code: 409 });
  });

  it("resumes a paused sandbox and returns it, with a new end time from the timeout", async () => {
    const id = runningId();
    sim.state.setState(id, "paused");
    const res = await call(sim, "POST", `${PREFIX}/sandboxes/${id}/resume`, { timeout: 60 });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ sandboxID: id, state: "running", domain: "sandbox.test" });
    expect(res.json.endAt).toBe(new Date(clock.now() + 60_000).toISOString());
    expect((await call(sim, "POST", `${PREFIX}/sandboxes/${id}/resume`)).status).toBe(409);
  });

  it("deletes a sandbox, after which it is 404 and gone from the list", async () => {
    const id = runningId();
    expect((await call(sim, "DELETE", `${PREFIX}/sandboxes/${id}`)).status).toBe(204);
    expect((await getJson(sim, `/sandboxes/${id}`)).status).toBe(404);
    expect((await call(sim, "DELETE", `${PREFIX}/sandboxes/${id}`)).status).toBe(404);
    const ids = ((await getJson(sim, "/v2/sandboxes")).json as Array<{ sandboxID: string }>).map(
      (s) => s.sandboxID,
    );
    expect(ids).not.toContain(id);
  });

  it("creates a running sandbox at the root path and under the prefix", async () => {
    const before = sim.state.sandboxes.size;
    const a = await call(sim, "POST", "/sandboxes", {
      templateID: "base",
      metadata: { team: "probe" },
    });
    expect(a.status).toBe(201);
    expect(a.json).toMatchObject({
      sandboxID: expect.any(String),
      templateID: sim.state.template("base")!.templateID,
      envdVersion: expect.any(String),
      envdAccessToken: expect.any(String),
      domain: "sandbox.test",
    });
    const created = sim.state.sandboxes.get(a.json.sandboxID)!;
    expect(created).toMatchObject({
      state: "running",
      startedAt: clock.now(),
      metadata: { team: "probe" },
    });
    expect((await call(sim, "POST", `${PREFIX}/sandboxes`, { templateID: "base" })).status).toBe(
      201,
    );
    expect(sim.state.sandboxes.size).toBe(before + 2);
    expect(sim.counters.get("POST /sandboxes")).toBe(2);
  });

  it("refuses to create from an unknown or broken template or with a bad body", async () => {
    expect((await call(sim, "POST", "/sandboxes", { templateID: "nope" })).status).toBe(404);
    expect((await call(sim, "POST", "/sandboxes", { timeout: 3 })).status).toBe(400);
    const t = sim.state.templates[2]!;
    sim.state.setTemplateStatus(t.templateID, "error", "boom");
    expect((await call(sim, "POST", "/sandboxes", { templateID: t.templateID })).status).toBe(400);
    sim.state.setTemplateStatus(t.templateID, "ready");
  });

  it("counts every lifecycle call as mutating", () => {
    expect(sim.counters.mutating()).toBe(
      sim.counters.get("POST /sandboxes") +
        sim.counters.get("DELETE /sandboxes/{id}") +
        sim.counters.get("POST /sandboxes/{id}/pause") +
        sim.counters.get("POST /sandboxes/{id}/resume"),
    );
    expect(sim.counters.mutating()).toBeGreaterThanOrEqual(10);
  });
});

describe("deterministic state", () => {
  it("builds the same fleet from the same seed and a different one from another", async () => {
    const clock = new FakeClock(1_750_000_000_000);
    const [a, b, c] = await Promise.all([
      startSimulator({ sandboxes: 500, seed: 7, clock }),
      startSimulator({ sandboxes: 500, seed: 7, clock }),
      startSimulator({ sandboxes: 500, seed: 8, clock }),
    ]);
    try {
      expect(a.state.sortedIds()).toEqual(b.state.sortedIds());
      expect(a.state.groundTruth()).toEqual(b.state.groundTruth());
      expect(a.state.sortedIds()).not.toEqual(c.state.sortedIds());
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it("grows and shrinks to a requested size, keeping the index sorted", async () => {
    const sim = await startSimulator({ sandboxes: 100 });
    try {
      sim.state.setSandboxCount(1000);
      expect(sim.state.sandboxes.size).toBe(1000);
      const ids = [...sim.state.sortedIds()];
      expect(ids).toEqual([...ids].sort());
      sim.state.setSandboxCount(40);
      expect(sim.state.sortedIds()).toEqual(ids.slice(0, 40));
      expect([...sim.state.sandboxes.keys()].sort()).toEqual(ids.slice(0, 40));
    } finally {
      await sim.close();
    }
  });
});
