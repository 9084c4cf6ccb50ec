import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { simCall } from "../helpers/sim-call.js";

/**
 * E2B's documented event (docs/sandbox/lifecycle-events-api.mdx, copied as published): the keys an
 * event of the events API carries (the sandbox id filled in).
 */
const E2B_DOCS_EVENT = {
  version: "v1",
  id: "30b09e11-9ba2-42db-9cf6-d21f0f43a234",
  type: "sandbox.lifecycle.updated",
  eventData: { set_timeout: "2025-08-06T20:59:59Z" },
  sandboxBuildId: "a979a14b-bdcc-49e6-bc04-1189fc9fe7c2",
  sandboxExecutionId: "1dae9e1c-9957-4ce7-a236-a99d5779aadf",
  sandboxId: "isandboxid0000000000",
  sandboxTeamId: "460355b3-4f64-48f9-9a16-4442817f79f5",
  sandboxTemplateId: "rki5dems9wqfm4r03t7g",
  timestamp: "2025-08-06T20:59:29Z",
};

interface WireEvent {
  id: string;
  type: string;
  eventData: Record<string, unknown>;
  sandboxId: string;
  sandboxExecutionId: string;
  sandboxTemplateId: string;
  sandboxBuildId: string;
  sandboxTeamId: string;
  timestamp: string;
  version: string;
}

const call = simCall;

async function events(sim: Simulator, query: string, id?: string): Promise<WireEvent[]> {
  const res = await call(sim, "GET", `/events/sandboxes${id ? `/${id}` : ""}${query}`);
  expect(res.status).toBe(200);
  return res.json as WireEvent[];
}

async function create(sim: Simulator, metadata?: Record<string, string>): Promise<string> {
  const res = await call(sim, "POST", "/sandboxes", { templateID: "base", timeout: 60, metadata });
  expect(res.status).toBe(201);
  return res.json.sandboxID as string;
}

describe("the simulator's lifecycle events (E2B mode)", () => {
  const start = Date.parse("2026-03-01T10:00:00Z");
  const clock = new FakeClock(start);
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ flavor: "e2b", sandboxes: 0, clock, maxEvents: 50 });
  });
  afterAll(() => sim.close());

  it("records a sandbox's life as E2B's orchestrator does, kill reason and execution included", async () => {
    const id = await create(sim, { owner: "probe" });
    clock.advance(1500);
    expect((await call(sim, "POST", `/sandboxes/${id}/timeout`, { timeout: 120 })).status).toBe(
      204,
    );
    clock.advance(500);
    expect((await call(sim, "POST", `/sandboxes/${id}/pause`)).status).toBe(204);
    clock.advance(1000);
    expect((await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 })).status).toBe(201);
    clock.advance(2250);
    expect((await call(sim, "DELETE", `/sandboxes/${id}`)).status).toBe(204);

    const got = await events(sim, "?orderAsc=true", id);
    expect(got.map((e) => e.type)).toEqual([
      "sandbox.lifecycle.created",
      "sandbox.lifecycle.updated",
      "sandbox.lifecycle.paused",
      "sandbox.lifecycle.resumed",
      "sandbox.lifecycle.killed",
    ]);
    const [created, updated, paused, resumed, killed] = got as [
      WireEvent,
      WireEvent,
      WireEvent,
      WireEvent,
      WireEvent,
    ];
    for (const e of got) {
      expect(Object.keys(e).sort()).toEqual(Object.keys(E2B_DOCS_EVENT).sort());
      expect(e.sandboxId).toBe(id);
      expect(e.sandboxTemplateId).toBe(sim.state.template("base")?.templateID);
      expect(e.sandboxBuildId).toBe(sim.state.template("base")?.buildID);
      expect(e.sandboxTeamId).toBe("460355b3-4f64-48f9-9a16-4442817f79f5");
      expect(e.eventData.sandbox_metadata).toEqual({ owner: "probe" });
    }
    expect(new Set(got.map((e) => e.id)).size).toBe(5);
    expect(created.timestamp).toBe("2026-03-01T10:00:00Z");
    expect(updated.timestamp).toBe("2026-03-01T10:00:01.5Z");
    expect(updated.eventData.set_timeout).toBe("2026-03-01T10:02:01Z");
    // A resume starts a new execution; pause and kill report the one that ended.
    expect(paused.sandboxExecutionId).toBe(created.sandboxExecutionId);
    expect(resumed.sandboxExecutionId).not.toBe(created.sandboxExecutionId);
    expect(killed.sandboxExecutionId).toBe(resumed.sandboxExecutionId);
    expect(paused.eventData.execution).toMatchObject({
      started_at: "2026-03-01T10:00:00Z",
      execution_time: 2000,
    });
    const template = sim.state.template("base");
    expect(killed.eventData).toEqual({
      sandbox_metadata: { owner: "probe" },
      kill_reason: "request",
      execution: {
        started_at: "2026-03-01T10:00:03Z",
        vcpu_count: template?.cpuCount,
        memory_mb: template?.memoryMB,
        execution_time: 2250,
      },
    });
    expect(created.eventData).toEqual({ sandbox_metadata: { owner: "probe" } });
  });

  it("records injected kills with their reason", async () => {
    const a = await create(sim);
    const b = await create(sim);
    sim.state.removeSandbox(a, "orphaned");
    sim.state.removeSandbox(b, "resume_failed");
    const killed = await events(sim, "?types=sandbox.lifecycle.killed&limit=2");
    expect(killed.map((e) => [e.sandboxId, e.eventData.kill_reason])).toEqual([
      [b, "resume_failed"],
      [a, "orphaned"],
    ]);
  });

  it("records a failed resume's teardown as killed with resume_failed", async () => {
    const id = await create(sim);
    expect((await call(sim, "POST", `/sandboxes/${id}/pause`)).status).toBe(204);
    sim.faults.lifecycle = { failResumeFrom: 1, killOnFailedResume: true };
    try {
      expect((await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 })).status).toBe(
        500,
      );
    } finally {
      sim.faults.lifecycle = {};
    }
    const [last] = await events(sim, "?limit=1", id);
    expect(last?.type).toBe("sandbox.lifecycle.killed");
    expect(last?.eventData.kill_reason).toBe("resume_failed");
    expect(sim.state.sandbox(id)).toBeUndefined();
  });

  it("filters by several types and answers a sandbox without events with an empty list", async () => {
    const got = await events(
      sim,
      "?types=sandbox.lifecycle.paused&types=sandbox.lifecycle.resumed&limit=100",
    );
    expect(got.map((e) => e.type)).toEqual([
      "sandbox.lifecycle.paused",
      "sandbox.lifecycle.resumed",
      "sandbox.lifecycle.paused",
    ]);
    expect(await events(sim, "", "inever-existed")).toEqual([]);
  });

  it("pages newest first, 10 by default, and refuses what E2B's validator refuses", async () => {
    for (let i = 0; i < 4; i++) await create(sim);
    const all = await events(sim, "?limit=100");
    expect(all).toHaveLength(16);
    expect(await events(sim, "")).toEqual(all.slice(0, 10));
    expect(await events(sim, "?offset=3&limit=4")).toEqual(all.slice(3, 7));
    const asc = await events(sim, "?orderAsc=true&limit=100");
    expect(asc).toEqual([...all].reverse());
    for (const q of [
      "limit=0",
      "limit=101",
      "offset=-1",
      "limit=x",
      "orderAsc=yes",
      "types=killed",
    ]) {
      const res = await call(sim, "GET", `/events/sandboxes?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.json.code).toBe(400);
    }
  });

  it("shifts descending pages when events arrive between pages; ascending pages stay put", async () => {
    const firstDesc = await events(sim, "?limit=3");
    const firstAsc = await events(sim, "?orderAsc=true&limit=3");
    await create(sim);
    const secondDesc = await events(sim, "?limit=3&offset=3");
    const secondAsc = await events(sim, "?orderAsc=true&limit=3&offset=3");
    // The new event pushed every older one down by one: the next page repeats the last one seen.
    expect(secondDesc[0]).toEqual(firstDesc[2]);
    const all = await events(sim, "?orderAsc=true&limit=100");
    expect(firstAsc).toEqual(all.slice(0, 3));
    expect(secondAsc).toEqual(all.slice(3, 6));
  });

  it("keeps at most maxEvents, and nothing older than 7 days of the simulator's clock", async () => {
    for (let i = 0; i < 50; i++) await create(sim);
    const kept = await events(sim, "?orderAsc=true&limit=100");
    expect(kept).toHaveLength(50);
    clock.advance(7 * 24 * 3600 * 1000 - 1000);
    const late = await create(sim);
    clock.advance(2000);
    const left = await events(sim, "?limit=100");
    expect(left.map((e) => e.sandboxId)).toEqual([late]);
  });
});

describe("events of the generated fleet", () => {
  it("report a killed sandbox's execution from its start, before any event was recorded", async () => {
    const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 20, clock });
    try {
      const s = [...sim.state.sandboxes.values()].find((x) => x.state === "running");
      if (!s) throw new Error("no running sandbox generated");
      clock.advance(4000);
      sim.state.removeSandbox(s.sandboxID, "orphaned");
      const [killed] = await events(sim, "", s.sandboxID);
      expect(killed?.eventData).toMatchObject({
        kill_reason: "orphaned",
        execution: { execution_time: clock.now() - s.startedAt },
      });
    } finally {
      await sim.close();
    }
  });
});

describe("events in sandboxapi mode", () => {
  it("are not served: the route is E2B's", async () => {
    const sim = await startSimulator({ sandboxes: 0 });
    try {
      const res = await request(`${sim.managementUrl}/events/sandboxes`);
      await res.body.dump();
      expect(res.statusCode).toBe(404);
    } finally {
      await sim.close();
    }
  });
});
