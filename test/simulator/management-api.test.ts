import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { getJson, PREFIX } from "./helpers.js";

interface Listed {
  sandboxID: string;
  templateID: string;
  state: string;
  cpuCount: number;
  memoryMB: number;
  startedAt: string;
  metadata: Record<string, string>;
}

/** Walks every page of /v2/sandboxes (header tokens), bounded. */
async function walk(sim: Simulator, query = "", onPage?: (n: number) => void): Promise<Listed[]> {
  const all: Listed[] = [];
  let token: string | undefined;
  for (let page = 0; page < 2000; page++) {
    const q = new URLSearchParams(query);
    if (token) q.set("nextToken", token);
    const res = await getJson(sim, `/v2/sandboxes?${q}`);
    expect(res.status).toBe(200);
    all.push(...(res.json as Listed[]));
    onPage?.(page);
    token = res.headers["x-next-token"] as string | undefined;
    if (!token) return all;
  }
  throw new Error("walk did not end");
}

describe("management API", () => {
  const clock = new FakeClock(Date.parse("2025-06-01T12:00:00Z"));
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 10_000, clock });
  });
  afterAll(() => sim.close());

  it("walks 10,000 sandboxes in 100-item pages, each exactly once, in id order", async () => {
    const all = await walk(sim, "limit=100");
    const ids = all.map((s) => s.sandboxID);
    expect(ids.length).toBe(10_000);
    expect(new Set(ids).size).toBe(10_000);
    expect(ids).toEqual([...sim.state.sortedIds()]);
    expect(sim.counters.get("GET /v2/sandboxes")).toBeGreaterThanOrEqual(100);
  });

  it("serves a walk whose per state x template totals equal the ground truth", async () => {
    const rows = new Map<string, { count: number; cpu: number; mem: number; oldest: number }>();
    for (const s of await walk(sim)) {
      const key = `${s.state}/${s.templateID}`;
      const row = rows.get(key) ?? { count: 0, cpu: 0, mem: 0, oldest: Number.POSITIVE_INFINITY };
      row.count++;
      row.cpu += s.cpuCount;
      row.mem += s.memoryMB * 1048576;
      row.oldest = Math.min(row.oldest, Date.parse(s.startedAt) / 1000);
      rows.set(key, row);
    }
    const truth = sim.state.groundTruth();
    expect(truth.length).toBe(rows.size);
    for (const t of truth) {
      expect(rows.get(`${t.state}/${t.templateId}`)).toEqual({
        count: t.count,
        cpu: t.cpuSum,
        mem: t.memoryBytesSum,
        oldest: t.oldestStartSeconds,
      });
    }
    const states = new Set(truth.map((t) => t.state));
    expect(states).toContain("running");
    expect(states).toContain("paused");
  });

  it("caps limit at the page size cap and rejects a bad limit or token", async () => {
    const big = await getJson(sim, "/v2/sandboxes?limit=5000");
    expect((big.json as unknown[]).length).toBe(100);
    expect((await getJson(sim, "/v2/sandboxes?limit=0")).status).toBe(400);
    expect((await getJson(sim, "/v2/sandboxes?nextToken=%25%25")).status).toBe(400);
  });

  it("filters by a comma list of states", async () => {
    const paused = await walk(sim, "state=paused");
    expect(paused.length).toBe(
      sim.state
        .groundTruth()
        .filter((t) => t.state === "paused")
        .reduce((n, t) => n + t.count, 0),
    );
    expect(paused.every((s) => s.state === "paused")).toBe(true);
    const both = await walk(sim, "state=running,paused");
    expect(both.every((s) => s.state === "running" || s.state === "paused")).toBe(true);
    expect(both.length).toBeGreaterThan(paused.length);
  });

  it("filters by url-encoded metadata pairs, all of which must match", async () => {
    const q = new URLSearchParams({ metadata: "team=ml&env=prod" }).toString();
    const found = await walk(sim, q);
    const expected = [...sim.state.sandboxes.values()].filter(
      (s) => s.metadata.team === "ml" && s.metadata.env === "prod",
    );
    expect(found.length).toBe(expected.length);
    expect(found.length).toBeGreaterThan(0);
  });

  it("keeps pages consistent when sandboxes come and go during a walk", async () => {
    const before = [...sim.state.sortedIds()];
    const removed: string[] = [];
    const added: string[] = [];
    let cursor = "";
    const seen = await walk(sim, "limit=100", (page) => {
      if (page !== 10) return;
      // Page 10 ends at index 1099: delete one id behind the cursor and two ahead, add three.
      cursor = sim.state.sortedIds()[1099]!;
      for (const i of [5, 5000, 9000]) {
        const id = sim.state.sortedIds()[i]!;
        sim.state.removeSandbox(id);
        removed.push(id);
      }
      for (let i = 0; i < 3; i++) added.push(sim.state.addSandbox().sandboxID);
    });
    const seenIds = seen.map((s) => s.sandboxID);
    const seenSet = new Set(seenIds);
    expect(seenSet.size).toBe(seenIds.length);
    const gone = new Set(removed);
    expect(before.filter((id) => !gone.has(id) && !seenSet.has(id))).toEqual([]);
    expect(seenSet.has(removed[0]!)).toBe(true);
    expect(seenSet.has(removed[1]!)).toBe(false);
    expect(seenSet.has(removed[2]!)).toBe(false);
    for (const id of added) expect(seenSet.has(id)).toBe(id > cursor);
  });

  it("serves health, overview, nodes and templates derived from state", async () => {
    expect((await getJson(sim, "/health")).json).toEqual({ status: "ok" });
    const overview = (await getJson(sim, "/cluster/overview")).json as Record<string, number>;
    expect(overview.sandboxCount).toBe(sim.state.sandboxes.size);
    expect(overview.nodeCount).toBe(3);
    const nodes = (await getJson(sim, "/nodes")).json as Array<{
      nodeID: string;
      status: string;
      sandboxCount: number;
    }>;
    expect(nodes.length).toBe(3);
    const running = [...sim.state.sandboxes.values()].filter((s) => s.state === "running").length;
    expect(nodes.reduce((n, x) => n + x.sandboxCount, 0)).toBe(running);
    sim.state.setNodeStatus(nodes[0]!.nodeID, "draining");
    const one = await getJson(sim, `/nodes/${nodes[0]!.nodeID}`);
    expect((one.json as { status: string }).status).toBe("draining");
    const templates = (await getJson(sim, "/templates")).json as Array<{ templateID: string }>;
    expect(templates.length).toBe(5);
    sim.state.setTemplateStatus(templates[1]!.templateID, "error", "build failed");
    const t = (await getJson(sim, `/templates/${templates[1]!.templateID}`)).json;
    expect(t).toMatchObject({ status: "error", error: "build failed" });
  });

  it("answers 404 with {code, message} for unknown ids and routes", async () => {
    for (const path of [
      "/sandboxes/nope",
      "/nodes/nope",
      "/templates/nope",
      "/v2/sandboxes/nope/logs",
      "/nothing",
    ]) {
      const res = await getJson(sim, path);
      expect(res.status).toBe(404);
      expect(res.json).toMatchObject({ code: 404, message: expect.any(String) });
    }
  });

  it("pages logs forward and backward with opaque cursors", async () => {
    const id = sim.state.sortedIds()[0]!;
    for (let i = 0; i < 7; i++) sim.state.appendLog(id, `line ${i}`);
    const total = sim.state.sandboxes.get(id)!.logs.length;
    const forward: string[] = [];
    let cursor = "";
    for (let i = 0; i < 20; i++) {
      const res = await getJson(sim, `/v2/sandboxes/${id}/logs?limit=3&direction=forward${cursor}`);
      const body = res.json as {
        logs: Array<{ line: string; timestamp: string }>;
        nextCursor?: string;
      };
      forward.push(...body.logs.map((l) => l.line));
      if (!body.nextCursor) break;
      cursor = `&cursor=${body.nextCursor}`;
    }
    expect(forward.length).toBe(total);
    expect(forward.at(-1)).toBe("line 6");
    const back = await getJson(sim, `/v2/sandboxes/${id}/logs?limit=2&direction=backward`);
    const lines = (back.json as { logs: Array<{ line: string; timestamp: string }> }).logs;
    expect(lines.map((l) => l.line)).toEqual(["line 6", "line 5"]);
    expect(lines[0]!.timestamp).toBe(new Date(clock.now()).toISOString());
  });

  it("pages newest first, then by id, when listOrder is started (E2B's order)", async () => {
    const started = await startSimulator({ sandboxes: 2_500, listOrder: "started", clock });
    try {
      const all = await walk(started, "limit=100");
      const ids = all.map((s) => s.sandboxID);
      expect(ids.length).toBe(2_500);
      expect(new Set(ids).size).toBe(2_500);
      const key = (s: Listed) => [-Date.parse(s.startedAt), s.sandboxID] as const;
      for (let i = 1; i < all.length; i++) {
        const [t0, id0] = key(all[i - 1]!);
        const [t1, id1] = key(all[i]!);
        expect(t0 < t1 || (t0 === t1 && id0 < id1), `${id0} before ${id1}`).toBe(true);
      }
      expect(ids).not.toEqual([...ids].sort());
      // Filters apply within the order; a sandbox started during the walk is newest, so not seen.
      const running = await walk(started, "limit=50&state=running", (page) => {
        if (page === 3) started.state.addSandbox({ state: "running" });
      });
      const truth = [...started.state.sandboxes.values()].filter((s) => s.state === "running");
      expect(running.length).toBe(truth.length - 1);
      // A token of the id order is not a position in this one.
      const idToken = Buffer.from(ids[0]!, "utf8").toString("base64url");
      expect((await getJson(started, `/v2/sandboxes?nextToken=${idToken}`)).status).toBe(400);
    } finally {
      await started.close();
    }
  });

  it("puts the next token in the body when tokenStyle is body", async () => {
    const bodySim = await startSimulator({ sandboxes: 250, tokenStyle: "body", clock });
    try {
      const ids: string[] = [];
      let token: string | undefined;
      for (let i = 0; i < 10; i++) {
        const q = token ? `?nextToken=${token}` : "";
        const res = await getJson(bodySim, `/v2/sandboxes${q}`);
        const body = res.json as { sandboxes: Listed[]; nextToken?: string };
        expect(res.headers["x-next-token"]).toBeUndefined();
        ids.push(...body.sandboxes.map((s) => s.sandboxID));
        token = body.nextToken;
        if (!token) break;
      }
      expect(ids.length).toBe(250);
    } finally {
      await bodySim.close();
    }
  });

  it("counts requests by route template with ids replaced", async () => {
    sim.counters.reset();
    const id = sim.state.sortedIds()[1]!;
    await getJson(sim, `/sandboxes/${id}`);
    await getJson(sim, `/sandboxes/${id}`);
    await getJson(sim, "/health");
    expect(sim.counters.get("GET /sandboxes/{id}")).toBe(2);
    expect(sim.counters.snapshot()).toEqual({ "GET /sandboxes/{id}": 2, "GET /health": 1 });
    expect(sim.counters.total()).toBe(3);
    expect(sim.counters.mutating()).toBe(0);
  });
});

describe("API key", () => {
  it("refuses management and create calls without the key, and accepts either header", async () => {
    const sim = await startSimulator({ sandboxes: 10, apiKey: "k-123" });
    try {
      expect((await getJson(sim, "/nodes")).status).toBe(401);
      expect((await getJson(sim, "/nodes", { "x-api-key": "wrong" })).status).toBe(401);
      expect((await getJson(sim, "/nodes", { "x-api-key": "k-123" })).status).toBe(200);
      expect((await getJson(sim, "/nodes", { authorization: "Bearer k-123" })).status).toBe(200);
      const create = await request(`${sim.apiUrl}/sandboxes`, {
        method: "POST",
        body: JSON.stringify({ templateID: "base" }),
      });
      await create.body.dump();
      expect(create.statusCode).toBe(401);
      const body = (await getJson(sim, "/nodes")).text;
      expect(body).not.toContain("k-123");
      expect(sim.counters.get("GET /nodes")).toBe(5);
      expect(PREFIX).toBe("/sandboxapi/v1");
    } finally {
      await sim.close();
    }
  });
});
