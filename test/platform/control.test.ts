import { Agent, EnvHttpProxyAgent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ControlClient,
  type ControlOptions,
  type RequestInfo,
} from "../../src/platform/control.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startProxy } from "../helpers/proxy.js";

const KEY = "k-test-secret-123";
let sim: Simulator;
const clients: ControlClient[] = [];

function client(extra: Partial<ControlOptions> = {}): ControlClient {
  const c = new ControlClient({
    apiUrl: sim.apiUrl,
    apiKey: KEY,
    authStyle: "x-api-key",
    timeoutMs: 2_000,
    retries: 2,
    dispatcher: new Agent(),
    sleep: async () => {},
    ...extra,
  });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  sim = await startSimulator({ sandboxes: 250, apiKey: KEY, nodes: 3, templates: 4 });
});
afterEach(() => {
  sim.faults.clear();
  sim.counters.reset();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await sim.close();
});

describe("ControlClient against the simulator", () => {
  it("reads health, overview, nodes, templates and their details", async () => {
    const c = client();
    expect((await c.health()).up).toBe(true);
    expect((await c.clusterOverview()).numeric.node_count).toBe(3);
    const nodes = await c.listNodes();
    expect(nodes).toHaveLength(3);
    expect((await c.getNode(nodes[0]!.id)).id).toBe(nodes[0]!.id);
    const templates = await c.listTemplates();
    expect(templates).toHaveLength(4);
    expect((await c.getTemplate(templates[1]!.id)).id).toBe(templates[1]!.id);
    for (const route of [
      "GET /health",
      "GET /cluster/overview",
      "GET /nodes",
      "GET /nodes/{id}",
      "GET /templates",
      "GET /templates/{id}",
    ]) {
      expect(sim.counters.get(route), route).toBe(1);
    }
  });

  it("pages the sandbox list, reads logs, and runs the lifecycle calls", async () => {
    const c = client();
    const first = await c.listSandboxes({ limit: 100 });
    expect(first.items).toHaveLength(100);
    expect(first.nextToken).toBeTruthy();
    const second = await c.listSandboxes({ limit: 100, nextToken: first.nextToken! });
    expect(second.items[0]!.id).not.toBe(first.items[0]!.id);
    const running = [...sim.state.sandboxes.values()].find((s) => s.state === "running")!;
    const logs = await c.listLogs(running.sandboxID, { limit: 1, direction: "backward" });
    expect(logs.items).toHaveLength(1);
    expect(typeof logs.items[0]!.timestamp).toBe("number");
    await c.pauseSandbox(running.sandboxID);
    expect((await c.getSandbox(running.sandboxID)).state).toBe("paused");
    expect((await c.resumeSandbox(running.sandboxID)).state).toBe("running");
    await c.deleteSandbox(running.sandboxID);
    await expect(c.getSandbox(running.sandboxID)).rejects.toMatchObject({
      code: "ERR_PLATFORM_NOT_FOUND",
    });
  });

  it("creates a sandbox and returns its access token", async () => {
    const created = await client().createSandbox({
      templateId: sim.state.templates[0]!.templateID,
      metadata: { a: "b" },
    });
    expect(sim.state.sandboxes.get(created.id)?.metadata).toEqual({ a: "b" });
    expect(created.accessToken).toBeTruthy();
    expect(sim.counters.get("POST /sandboxes")).toBe(1);
  });

  it("sends the key as Authorization: Bearer when configured, and fails without it", async () => {
    expect((await client({ authStyle: "bearer" }).listNodes()).length).toBe(3);
    await expect(client({ apiKey: "wrong" }).listNodes()).rejects.toMatchObject({
      code: "ERR_PLATFORM_HTTP",
      status: 401,
    });
  });

  it("retries an idempotent GET on 503 and reports every attempt", async () => {
    const seen: RequestInfo[] = [];
    sim.faults.route("GET /nodes", { status: 503 });
    await expect(client({ onRequest: (i) => seen.push(i) }).listNodes()).rejects.toMatchObject({
      status: 503,
    });
    expect(sim.counters.get("GET /nodes")).toBe(3);
    expect(seen.map((s) => s.error)).toEqual(["http_5xx", "http_5xx", "http_5xx"]);
  });

  it("never retries a mutating call", async () => {
    const id = sim.state.sortedIds()[0]!;
    sim.state.setState(id, "running");
    sim.faults.route("POST /sandboxes/{id}/pause", { status: 503 });
    await expect(client().pauseSandbox(id)).rejects.toMatchObject({ code: "ERR_PLATFORM_HTTP" });
    expect(sim.counters.get("POST /sandboxes/{id}/pause")).toBe(1);
  });

  it("types a timeout", async () => {
    sim.faults.route("GET /health", { latencyMs: 500 });
    await expect(client({ timeoutMs: 50, retries: 0 }).health()).rejects.toMatchObject({
      code: "ERR_PLATFORM_TIMEOUT",
    });
  });

  it("types a malformed body and names the endpoint", async () => {
    sim.faults.route("GET /templates", { malformed: true });
    await expect(client({ retries: 0 }).listTemplates()).rejects.toMatchObject({
      code: "ERR_PLATFORM_BAD_BODY",
    });
  });

  it("never puts the key in an error, even when the server echoes it", async () => {
    const echo = new ControlClient({
      apiUrl: sim.apiUrl,
      apiKey: "wrong-key-echoed",
      authStyle: "x-api-key",
      timeoutMs: 2_000,
      retries: 0,
      dispatcher: new Agent(),
    });
    clients.push(echo);
    const err = (await echo.getSandbox("wrong-key-echoed").catch((e: unknown) => e)) as Error;
    expect(err.message).not.toContain("wrong-key-echoed");
  });

  it("sends every control call through the HTTP proxy", async () => {
    const proxy = await startProxy();
    try {
      const c = client({
        dispatcher: new EnvHttpProxyAgent({ httpProxy: proxy.url, noProxy: "" }),
      });
      await c.health();
      await c.listSandboxes({ limit: 10 });
      expect(proxy.seen.length).toBeGreaterThan(0);
      expect(proxy.seen.every((h) => h === new URL(sim.apiUrl).host)).toBe(true);
      expect(sim.counters.total()).toBe(2);
    } finally {
      await proxy.close();
    }
  });
});
