import type { IncomingMessage, ServerResponse } from "node:http";
import { Agent, EnvHttpProxyAgent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type {
  ControlClient,
  ControlOptions,
  RequestInfo,
} from "../../../src/platform/control/control.js";
import { RequestLimiter } from "../../../src/platform/control/limiter.js";
import { backoffDelay, parseRetryAfter } from "../../../src/platform/control/retry.js";
import {
  errorReason,
  PlatformBodyError,
  PlatformHttpError,
  PlatformNotFoundError,
} from "../../../src/platform/http-errors.js";
import { type Simulator, startSimulator } from "../../../src/simulator/index.js";
import { FakeClock } from "../../../src/util/clock.js";
import { testControl } from "../../helpers/control.js";
import { errorTexts } from "../../helpers/error-texts.js";
import { startProxy } from "../../helpers/proxy.js";
import { serveHandler } from "../../helpers/serve.js";

const KEY = "k-test-secret-123";
let sim: Simulator;
const closers: Array<() => Promise<void>> = [];

/** A client of the simulator; `sleeps` records every backoff delay instead of waiting. */
function client(extra: Partial<ControlOptions> = {}, sleeps: number[] = []): ControlClient {
  const dispatcher = new Agent();
  const c = testControl({
    apiUrl: sim.apiUrl,
    apiKey: KEY,
    timeoutMs: 2_000,
    retries: 2,
    dispatcher,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...extra,
  });
  closers.push(() => dispatcher.close());
  return c;
}

/** A one-off loopback server for answers the simulator does not give: its URL. */
const serve = async (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  (await serveHandler(closers, handler)).url;

function readyTemplate(): string {
  return sim.state.templates.find((t) => t.status === "ready")!.templateID;
}

beforeAll(async () => {
  sim = await startSimulator({ sandboxes: 250, apiKey: KEY, nodes: 3, templates: 4 });
});
afterEach(() => {
  sim.faults.clear();
  sim.counters.reset();
});
afterAll(async () => {
  for (const close of closers) await close();
  await sim.close();
});

describe("backoff", () => {
  it("doubles the full-jitter ceiling from 100 ms and caps it at 2 s", () => {
    const b = { baseMs: 100, capMs: 2_000, random: () => 0.999 };
    expect([1, 2, 3, 4, 5, 6, 9].map((n) => backoffDelay(n, b))).toEqual([
      99, 199, 399, 799, 1598, 1998, 1998,
    ]);
    expect(backoffDelay(3, { ...b, random: () => 0 })).toBe(0);
  });

  it("waits at least a Retry-After, but never past the cap", () => {
    const b = { baseMs: 100, capMs: 2_000, random: () => 0 };
    expect(backoffDelay(1, b, 700)).toBe(700);
    expect(backoffDelay(1, b, 60_000)).toBe(2_000);
  });

  it("reads Retry-After as seconds or as an HTTP date against the injected clock", () => {
    const clock = new FakeClock(Date.parse("2030-01-01T00:00:00Z"));
    expect(parseRetryAfter("3", clock.now())).toBe(3_000);
    expect(parseRetryAfter("Tue, 01 Jan 2030 00:00:05 GMT", clock.now())).toBe(5_000);
    expect(parseRetryAfter("Mon, 31 Dec 2029 00:00:00 GMT", clock.now())).toBe(0);
    expect(parseRetryAfter("soon", clock.now())).toBeUndefined();
    expect(parseRetryAfter(undefined, clock.now())).toBeUndefined();
  });
});

describe("ControlClient against the simulator", () => {
  it("reads health, overview, nodes, templates and their details, one request each", async () => {
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

  it("reports a down platform from /health without raising", async () => {
    sim.faults.healthDown = true;
    expect((await client().health()).up).toBe(false);
  });

  it("pages the sandbox list with nextToken and limit", async () => {
    const c = client();
    const first = await c.listSandboxes({ limit: 100 });
    expect(first.items).toHaveLength(100);
    expect(first.nextToken).toBeTruthy();
    const second = await c.listSandboxes({ limit: 100, nextToken: first.nextToken! });
    expect(second.items).toHaveLength(100);
    const firstIds = new Set(first.items.map((s) => s.id));
    expect(second.items.some((s) => firstIds.has(s.id))).toBe(false);
  });

  it("reads slim pages without metadata, end time and extra fields, and full pages with them", async () => {
    const c = client();
    const full = (await c.listSandboxPage({ limit: 100 })).items();
    const slim = (await c.listSandboxPage({ limit: 100 }, { slim: true })).items();
    expect(slim.map((s) => [s.id, s.templateId, s.state, s.cpuCount, s.startedAt])).toEqual(
      full.map((s) => [s.id, s.templateId, s.state, s.cpuCount, s.startedAt]),
    );
    expect(full.some((s) => Object.keys(s.metadata).length > 0 && s.endAt !== undefined)).toBe(
      true,
    );
    // Slim records keep the end time and, of the metadata, only the probe tag (churn needs both).
    expect(
      slim.every(
        (s) =>
          Object.keys(s.metadata).length === 0 ||
          Object.keys(s.metadata).every((k) => k === "sandbox-exporter/probe"),
      ),
    ).toBe(true);
    expect(slim.map((s) => s.endAt)).toEqual(full.map((s) => s.endAt));
    // The simulator's diskSizeMB is an unmapped number: extra on full pages, left out of slim ones.
    expect(full.every((s) => typeof s.extra.disk_size_mb === "number")).toBe(true);
    expect(slim.every((s) => Object.keys(s.extra).length === 0)).toBe(true);
    // Shape memo intact: a full page read after slim ones still finds every extra field.
    const again = (await c.listSandboxPage({ limit: 100 })).items();
    expect(again.map((s) => s.extra)).toEqual(full.map((s) => s.extra));
  });

  it("passes the state and metadata filters through as the platform expects them", async () => {
    const all = [...sim.state.sandboxes.values()];
    const team = all.find((s) => s.metadata.team)!.metadata.team!;
    const want = all.filter(
      (s) => ["running", "paused"].includes(s.state) && s.metadata.team === team,
    );
    const got = await client().listSandboxes({
      state: "running,paused",
      metadata: `team=${team}`,
      limit: 100,
    });
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThanOrEqual(100);
    expect(got.items.map((s) => s.id).sort()).toEqual(want.map((s) => s.sandboxID).sort());
  });

  it("reads logs and runs pause, resume and delete; a deleted sandbox is typed not-found", async () => {
    const c = client();
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
      endpoint: "/sandboxes/{id}",
    });
    expect(sim.counters.get("GET /sandboxes/{id}")).toBe(2);
  });

  it("creates a sandbox outside the management prefix and returns its access token", async () => {
    const created = await client().createSandbox({
      templateId: readyTemplate(),
      timeoutS: 120,
      metadata: { a: "b" },
    });
    const stored = sim.state.sandboxes.get(created.id)!;
    expect(stored.metadata).toEqual({ a: "b" });
    expect(stored.endAt - stored.startedAt).toBe(120_000);
    expect(created.accessToken).toBe(stored.accessToken);
    expect(created.templateId).toBe(readyTemplate());
    expect((created.raw as { sandboxID: string }).sandboxID).toBe(created.id);
    expect(sim.counters.get("POST /sandboxes")).toBe(1);
  });

  it("sends the key as X-API-Key or Authorization: Bearer, and fails typed without it", async () => {
    expect(await client().listNodes()).toHaveLength(3);
    expect(await client({ authStyle: "bearer" }).listNodes()).toHaveLength(3);
    await expect(client({ apiKey: "wrong" }).listNodes()).rejects.toMatchObject({
      code: "ERR_PLATFORM_HTTP",
      status: 401,
    });
    await expect(client({ apiKey: "" }).listNodes()).rejects.toMatchObject({ status: 401 });
  });

  it("puts the key in the configured header", async () => {
    const seen: Array<Record<string, unknown>> = [];
    const url = await serve((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
    });
    await client({ apiUrl: url, authHeader: "X-Platform-Token" }).listNodes();
    await client({ apiUrl: url, authStyle: "bearer" }).listNodes();
    expect(seen[0]!["x-platform-token"]).toBe(KEY);
    expect(seen[0]!["x-api-key"]).toBeUndefined();
    expect(seen[1]!.authorization).toBe(`Bearer ${KEY}`);
  });

  it("retries a GET through an injected 503 error rate and succeeds", async () => {
    const sleeps: number[] = [];
    sim.faults.route("GET /nodes", { status: 503, errorRate: 0.5 });
    const c = client({ retries: 10 }, sleeps);
    for (let i = 0; i < 8; i++) expect(await c.listNodes()).toHaveLength(3);
    expect(sim.counters.get("GET /nodes")).toBeGreaterThan(8);
    expect(sleeps).toHaveLength(sim.counters.get("GET /nodes") - 8);
  });

  it("gives up after `retries` extra attempts with jittered backoff and reports each attempt", async () => {
    const seen: RequestInfo[] = [];
    const sleeps: number[] = [];
    sim.faults.route("GET /nodes", { status: 503 });
    await expect(
      client({ onRequest: (i) => seen.push(i) }, sleeps).listNodes(),
    ).rejects.toMatchObject({ code: "ERR_PLATFORM_HTTP", status: 503 });
    expect(sim.counters.get("GET /nodes")).toBe(3);
    expect(sleeps).toEqual([50, 100]);
    expect(seen.map((s) => [s.endpoint, s.status, s.error])).toEqual([
      ["/nodes", 503, "http_5xx"],
      ["/nodes", 503, "http_5xx"],
      ["/nodes", 503, "http_5xx"],
    ]);
  });

  it("honours Retry-After on 429, up to the cap", async () => {
    let calls = 0;
    const url = await serve((_req, res) => {
      calls++;
      if (calls === 1) res.writeHead(429, { "retry-after": "1" }).end();
      else if (calls === 2) res.writeHead(429, { "retry-after": "3600" }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end("[]");
    });
    const sleeps: number[] = [];
    expect(await client({ apiUrl: url, retries: 3 }, sleeps).listTemplates()).toEqual([]);
    expect(sleeps).toEqual([1_000, 2_000]);
  });

  it("retries network errors, but not a 4xx", async () => {
    const seen: RequestInfo[] = [];
    const refused = await serve(() => {});
    for (const close of closers.splice(-1)) await close();
    await expect(
      client({ apiUrl: refused, onRequest: (i) => seen.push(i) }).listNodes(),
    ).rejects.toMatchObject({ code: "ERR_PLATFORM_NETWORK" });
    expect(seen.map((s) => s.error)).toEqual(["network", "network", "network"]);
    sim.faults.route("GET /templates", { status: 400 });
    await expect(client().listTemplates()).rejects.toMatchObject({ status: 400 });
    expect(sim.counters.get("GET /templates")).toBe(1);
  });

  it("attempts a mutating call exactly once, whatever the failure", async () => {
    const id = sim.state.sortedIds()[0]!;
    sim.state.setState(id, "running");
    sim.faults.route("POST /sandboxes/{id}/pause", { status: 503 });
    await expect(client().pauseSandbox(id)).rejects.toMatchObject({ code: "ERR_PLATFORM_HTTP" });
    expect(sim.counters.get("POST /sandboxes/{id}/pause")).toBe(1);
    sim.faults.deleteFails = 503;
    await expect(client().deleteSandbox(id)).rejects.toMatchObject({ status: 503 });
    expect(sim.counters.get("DELETE /sandboxes/{id}")).toBe(1);
    sim.faults.createFails = 500;
    await expect(client().createSandbox({ templateId: readyTemplate() })).rejects.toMatchObject({
      status: 500,
    });
    expect(sim.counters.get("POST /sandboxes")).toBe(1);
    expect(sim.counters.mutating()).toBe(3);
  });

  it("types a timeout", async () => {
    const seen: RequestInfo[] = [];
    sim.faults.route("GET /health", { latencyMs: 1_000 });
    await expect(
      client({ timeoutMs: 50, retries: 0, onRequest: (i) => seen.push(i) }).health(),
    ).rejects.toMatchObject({ code: "ERR_PLATFORM_TIMEOUT", timeoutMs: 50 });
    expect(seen.map((s) => s.error)).toEqual(["timeout"]);
  });

  it("types a malformed body, naming the endpoint and the byte count", async () => {
    sim.faults.route("GET /templates", { malformed: true });
    const err = await client({ retries: 0 })
      .listTemplates()
      .catch((e: unknown) => e as Error);
    expect(err).toMatchObject({ code: "ERR_PLATFORM_BAD_BODY", endpoint: "/templates" });
    expect((err as Error).message).toMatch(
      /GET \/templates: response of \d+ bytes is not valid JSON/,
    );
  });

  it("refuses a body past the size cap", async () => {
    await expect(client({ maxBodyBytes: 64 }).listNodes()).rejects.toMatchObject({
      code: "ERR_PLATFORM_BAD_BODY",
    });
  });

  it("never puts the key in an error, even when the server echoes it", async () => {
    const url = await serve((req, res) => {
      const key = String(req.headers["x-api-key"] ?? req.headers.authorization).replace(
        "Bearer ",
        "",
      );
      // The key straddles the 200-character excerpt cut, and appears again later.
      res.writeHead(400).end(`${"x".repeat(195)}${key} and again ${key}`);
    });
    for (const authStyle of ["x-api-key", "bearer"] as const) {
      const err = await client({ apiUrl: url, authStyle })
        .getSandbox("abc")
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PlatformHttpError);
      const e = err as PlatformHttpError;
      // Scrubbed before the cut: the cut falls inside the replacement, not inside the key.
      expect(e.bodyExcerpt.endsWith(`${"x".repeat(195)}[REDA...`)).toBe(true);
      expect(e.bodyExcerpt.length).toBeLessThanOrEqual(203);
      for (const text of [e.message, e.bodyExcerpt, JSON.stringify(e), String(e.stack)]) {
        expect(text).not.toContain(KEY);
        expect(text).not.toContain(KEY.slice(0, 5));
      }
    }
  });
});

describe("ControlClient through an HTTP proxy", () => {
  it("sends every control call through the proxy as an absolute-URI request", async () => {
    const proxy = await startProxy();
    closers.push(() => proxy.close());
    const dispatcher = new EnvHttpProxyAgent({
      httpProxy: proxy.url,
      noProxy: "",
      proxyTunnel: false,
    });
    closers.push(() => dispatcher.close());
    const c = client({ dispatcher });
    const id = sim.state.sortedIds()[1]!;
    sim.state.setState(id, "running");
    await c.health();
    await c.listSandboxes({ limit: 10 });
    await c.getSandbox(id);
    await c.pauseSandbox(id);
    await c.resumeSandbox(id);
    const host = new URL(sim.apiUrl).host;
    expect(
      proxy.requests.map((r) => `${r.kind} ${r.method} ${r.host} ${r.path.split("?")[0]}`),
    ).toEqual([
      `forward GET ${host} /sandboxapi/v1/health`,
      `forward GET ${host} /sandboxapi/v1/v2/sandboxes`,
      `forward GET ${host} /sandboxapi/v1/sandboxes/${id}`,
      `forward POST ${host} /sandboxapi/v1/sandboxes/${id}/pause`,
      `forward POST ${host} /sandboxapi/v1/sandboxes/${id}/resume`,
    ]);
    expect(proxy.requests.every((r) => r.headers["x-api-key"] === KEY)).toBe(true);
    expect(sim.counters.total()).toBe(5);
  });

  it("goes through HTTP_PROXY when the loader saw a proxy variable, and straight to the platform when not", async () => {
    const proxy = await startProxy();
    closers.push(() => proxy.close());
    const saved = process.env.HTTP_PROXY;
    process.env.HTTP_PROXY = proxy.url;
    try {
      // Their own dispatchers, as the daemon's: none injected.
      const own = (envProxy: boolean) => {
        const c = testControl({
          apiUrl: sim.apiUrl,
          apiKey: KEY,
          timeoutMs: 2_000,
          envProxy,
        });
        closers.push(() => c.close());
        return c;
      };
      const viaEnv = own(true);
      const direct = own(false);
      await viaEnv.listNodes();
      expect(proxy.requests).toHaveLength(1);
      await direct.listNodes();
      expect(proxy.requests).toHaveLength(1);
      expect(sim.counters.get("GET /nodes")).toBe(2);
    } finally {
      if (saved === undefined) delete process.env.HTTP_PROXY;
      else process.env.HTTP_PROXY = saved;
    }
  });

  it("tunnels with CONNECT when the proxy agent is left at its default", async () => {
    const proxy = await startProxy();
    closers.push(() => proxy.close());
    const dispatcher = new EnvHttpProxyAgent({ httpProxy: proxy.url, noProxy: "" });
    closers.push(() => dispatcher.close());
    await client({ dispatcher }).listNodes();
    expect(proxy.requests.map((r) => `${r.kind} ${r.host}`)).toEqual([
      `connect ${new URL(sim.apiUrl).host}`,
    ]);
    expect(sim.counters.get("GET /nodes")).toBe(1);
  });
});

/** A POST /sandboxes answer without metadata, and a /v2/sandboxes page where every record has it. */
async function probePlatform(): Promise<string> {
  return serve((req, res) => {
    const json = (body: unknown) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (req.method === "POST" && req.url === "/sandboxes")
      return json({ sandboxID: "probe-9", templateID: "base", envdAccessToken: "ea_tok_9" });
    if (req.url?.startsWith("/sandboxapi/v1/v2/sandboxes"))
      return json(
        ["a", "b"].map((id) => ({
          sandboxID: `sb-${id}`,
          templateID: "base",
          startedAt: "2026-03-01T10:00:00Z",
          endAt: "2026-03-01T11:00:00Z",
          metadata: { "sandbox-exporter/probe": "default", team: "ml" },
          state: "running",
        })),
      );
    res.writeHead(404).end();
  });
}

describe("ControlClient normalizers", () => {
  it("reads listed sandboxes' metadata after a create answer without it and a slim walk", async () => {
    const c = client({ apiUrl: await probePlatform() });
    await c.createSandbox({ templateId: "base" });
    const slim = (await c.listSandboxPage({}, { slim: true })).items();
    // A slim walk keeps only the probe tag of the metadata.
    const tag = { "sandbox-exporter/probe": "default" };
    expect(slim.map((s) => s.metadata)).toEqual([tag, tag]);
    const full = await c.listSandboxes({});
    expect(full.items.map((s) => s.metadata)).toEqual([
      { ...tag, team: "ml" },
      { ...tag, team: "ml" },
    ]);
    expect(full.items.every((s) => s.endAt === Date.parse("2026-03-01T11:00:00Z"))).toBe(true);
  });

  it("gives each withOwnNormalizer client its own normalizer and shares the rest", async () => {
    const seen: RequestInfo[] = [];
    const keys: unknown[] = [];
    const wire = await serve((req, res) => {
      keys.push(req.headers["x-api-key"]);
      const body =
        req.method === "POST"
          ? { sandboxID: "probe-9", templateID: "base" }
          : [{ sandboxID: "sb-a", metadata: { team: "ml" }, state: "running" }];
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    const root = client({ apiUrl: wire, onRequest: (i) => seen.push(i) });
    const poller = root.withOwnNormalizer();
    const prober = root.withOwnNormalizer();
    expect(poller).not.toBe(root);
    await prober.createSandbox({ templateId: "base" });
    await poller.listSandboxPage({}, { slim: true }).then((d) => d.items());
    const byPoller = (await poller.listSandboxes({})).items[0]!;
    const byPollerAgain = (await poller.listSandboxes({})).items[0]!;
    const byProber = (await prober.listSandboxes({})).items[0]!;
    expect(byProber.metadata).toEqual({ team: "ml" });
    // Equal metadata is one frozen map per normalizer: shared within a client, never across two.
    expect(byPollerAgain.metadata).toBe(byPoller.metadata);
    expect(byProber.metadata).not.toBe(byPoller.metadata);
    // Options, key and onRequest are the root's.
    expect(seen.map((i) => `${i.method} ${i.endpoint} ${i.status}`)).toEqual([
      "POST /sandboxes 200",
      "GET /v2/sandboxes 200",
      "GET /v2/sandboxes 200",
      "GET /v2/sandboxes 200",
      "GET /v2/sandboxes 200",
    ]);
    expect(keys).toEqual(Array(5).fill(KEY));
  });

  it("leaves the dispatcher to the client that made it", async () => {
    const url = await probePlatform();
    const root = testControl({
      apiUrl: url,
      apiKey: KEY,
      timeoutMs: 2_000,
    });
    const own = root.withOwnNormalizer();
    await own.close();
    expect((await own.listSandboxes({})).items).toHaveLength(2);
    await root.close();
    await expect(own.listSandboxes({})).rejects.toMatchObject({ code: "ERR_PLATFORM_NETWORK" });
  });
});

describe("ControlClient bodies that are not what the endpoint promises", () => {
  it.each([
    ["an empty 200", "application/json", ""],
    ["a blank 200", "text/plain", " \n"],
    ["JSON null", "application/json", "null"],
    ["a null list", "application/json", '{"sandboxes": null, "nextToken": null}'],
    ["an object without a list", "application/json", '{"nextToken": "t"}'],
    ["text", "text/plain", "OK"],
  ])("reads %s from /v2/sandboxes as a bad body, not as an empty fleet", async (_l, type, body) => {
    const url = await serve((_req, res) => res.writeHead(200, { "content-type": type }).end(body));
    const err = await client({ apiUrl: url })
      .listSandboxPage({}, { slim: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformBodyError);
    expect(errorReason(err)).toBe("bad_body");
    expect((err as Error).message).toMatch(/^GET \/v2\/sandboxes: (body|sandboxes): expected an?/);
  });

  it("still reads a real empty list as an empty page", async () => {
    for (const body of ["[]", '{"sandboxes": []}', '{"items": [], "nextToken": null}']) {
      const url = await serve((_req, res) =>
        res.writeHead(200, { "content-type": "application/json" }).end(body),
      );
      expect(await client({ apiUrl: url }).listSandboxes({})).toEqual({ items: [] });
    }
  });

  it("reads an HTML page from /health as unknown, which is not up; an empty 204 as up", async () => {
    let answer: [number, string, string] = [200, "text/html", "<html><body>Login</body></html>"];
    const url = await serve((_req, res) => {
      const [status, type, body] = answer;
      res.writeHead(status, { "content-type": type }).end(body);
    });
    const c = client({ apiUrl: url });
    expect(await c.health()).toEqual({ up: false, status: "unknown" });
    answer = [204, "text/plain", ""];
    expect(await c.health()).toEqual({ up: true });
    answer = [200, "application/json", '{"status":"ok"}'];
    expect(await c.health()).toEqual({ up: true, status: "ok" });
    answer = [200, "application/json", '{"status":"down"}'];
    expect(await c.health()).toEqual({ up: false, status: "down" });
  });
});

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** Request headers echoed the way a hostile proxy does: several copies, one across each cut. */
function echoOf(key: string): string {
  let text = `upstream says: x-api-key=${key}; basic=${b64(key)}; `;
  // NormalizeError quotes 80 characters of a value, PlatformHttpError 200 of a body.
  for (const cut of [70, 195]) text = `${text.padEnd(cut, "p")}${key}`;
  return `${text} and so on`;
}

type Mode = "json-string" | "html" | "json-field" | "json-items" | 400 | 404 | 500;

describe("ControlClient never lets the key out in an error", () => {
  let mode: Mode = "json-string";
  const methods: Array<[string, (c: ControlClient) => Promise<unknown>]> = [
    ["health", (c) => c.health()],
    ["clusterOverview", (c) => c.clusterOverview()],
    ["listNodes", (c) => c.listNodes()],
    ["getNode", (c) => c.getNode("n-1")],
    ["listTemplates", (c) => c.listTemplates()],
    ["getTemplate", (c) => c.getTemplate("t-1")],
    ["getSandbox", (c) => c.getSandbox("sb-1")],
    ["deleteSandbox", (c) => c.deleteSandbox("sb-1")],
    ["pauseSandbox", (c) => c.pauseSandbox("sb-1")],
    ["resumeSandbox", (c) => c.resumeSandbox("sb-1")],
    ["listSandboxes", (c) => c.listSandboxes({})],
    ["listSandboxPage", (c) => c.listSandboxPage({}).then((d) => d.items())],
    ["listSandboxPage slim", (c) => c.listSandboxPage({}, { slim: true }).then((d) => d.items())],
    ["listLogs", (c) => c.listLogs("sb-1", {})],
    ["createSandbox", (c) => c.createSandbox({ templateId: "base" })],
    // A collector's own parser whose error quotes what came back.
    ["getJson", (c) => c.getJson("/nodes", "/nodes", {}, objectOnly)],
  ];
  let url = "";

  beforeAll(async () => {
    url = await serve((req, res) => {
      const auth = String(req.headers.authorization ?? "");
      const key = String(req.headers["x-api-key"] ?? auth.replace("Bearer ", ""));
      const echo = echoOf(key);
      const json = (body: unknown) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (typeof mode === "number") return res.writeHead(mode).end(echo);
      if (mode === "html")
        return res
          .writeHead(200, { "content-type": "text/html" })
          .end(`<html><body><pre>${echo}</pre></body></html>`);
      if (mode === "json-string") return json(echo);
      const record = { id: "x-1", status: key, cpuCount: echo, replicas: echo, timestamp: echo };
      if (mode === "json-field") return json({ ...record, items: echo });
      return json({ items: [record] });
    });
  });

  it.each(["json-string", "html", "json-field", "json-items", 400, 404, 500] as Mode[])(
    "scrubs every method's error when the platform echoes the key (answer %s)",
    async (m) => {
      mode = m;
      for (const authStyle of ["x-api-key", "bearer"] as const) {
        const c = client({ apiUrl: url, authStyle });
        const failed: string[] = [];
        for (const [name, call] of methods) {
          const result = await call(c).then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
          if ("error" in result) {
            failed.push(name);
            for (const text of errorTexts(result.error)) {
              expect(text, `${name}: ${text}`).not.toContain(KEY);
              expect(text, `${name}: ${text}`).not.toContain(KEY.slice(0, 6));
              expect(text, `${name}: ${text}`).not.toContain(b64(KEY).slice(0, 8));
            }
          } else if (name === "health") {
            expect(JSON.stringify(result.value)).not.toContain(KEY.slice(0, 6));
          }
        }
        // A 2xx the endpoint cannot read fails every reading method.
        const reads = ["clusterOverview", "getSandbox", "listSandboxes", "createSandbox"];
        if (m === "json-string" || m === "html")
          expect(failed).toEqual(expect.arrayContaining(reads));
        if (typeof m === "number") expect(failed).toHaveLength(methods.length - 1);
      }
    },
  );

  it("shows the scrubbed text where the key was, so the operator still sees what came back", async () => {
    mode = "json-string";
    const err = (await client({ apiUrl: url })
      .getSandbox("sb-1")
      .catch((e: unknown) => e)) as Error;
    // The copy across the 80-character cut is whole in the excerpt: it was scrubbed before the cut.
    expect(err.message).toMatch(
      /^GET \/sandboxes\/\{id\}: sandbox: expected a sandbox object, got string "upstream says: x-api-key=\[REDACTED\]; basic=\[REDACTED\]=?; \[REDACTED\]p+\.\.\."$/,
    );
  });
});

/** A collector's parser: an object, else an error quoting the body. */
function objectOnly(body: unknown): object {
  if (typeof body !== "object" || body === null) throw new Error(`got ${JSON.stringify(body)}`);
  return body;
}

describe("an answer the caller hoped for", () => {
  it("does not count the 404 of a GET that confirms a deletion as an API error; any other 404 is one", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not found"}');
    });
    const reasons: Array<string | undefined> = [];
    const c = client({ apiUrl: url, retries: 0, onRequest: (i) => reasons.push(i.error) });
    await expect(c.getSandbox("sb-gone", { expectGone: true })).rejects.toBeInstanceOf(
      PlatformNotFoundError,
    );
    await expect(c.getSandbox("sb-gone")).rejects.toBeInstanceOf(PlatformNotFoundError);
    expect(reasons).toEqual([undefined, "not_found"]);
  });
});

describe("one request budget for the whole daemon", () => {
  /** A limiter on fake time whose waits are recorded, and the grants it made. */
  function budget() {
    let t = 0;
    const waits: number[] = [];
    const grants: Array<[string, number]> = [];
    const limiter = new RequestLimiter({
      ratePerSecond: 1_000,
      burst: 10,
      now: () => t,
      sleep: async (ms) => {
        await Promise.resolve();
        waits.push(ms);
        t += ms;
      },
      onGrant: (caller, waited) => grants.push([caller, waited]),
    });
    return { limiter, waits, grants };
  }

  it("holds only the endpoint a 429 answered for the 3 s it asked, and counts it as rate_limited", async () => {
    let first = true;
    const url = await serve((req, res) => {
      if (first && req.url?.includes("/nodes")) {
        first = false;
        res.writeHead(429, { "retry-after": "3", "content-type": "application/json" });
        res.end('{"message":"slow down"}');
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
    });
    const { limiter, waits, grants } = budget();
    const reasons: Array<string | undefined> = [];
    // A poll request waits out a hold no longer than its own timeout: here a minute.
    const poll = client({
      apiUrl: url,
      retries: 0,
      timeoutMs: 60_000,
      limiter,
      maxRetryAfterMs: 60_000,
      onRequest: (i) => reasons.push(i.error),
    });
    await expect(poll.listNodes()).rejects.toBeInstanceOf(PlatformHttpError);
    expect(reasons).toEqual(["rate_limited"]);
    // Another caller, another endpoint: one endpoint's hold does not freeze the daemon.
    await poll.withOwnNormalizer("policy").listTemplates();
    expect(waits).toEqual([]);
    // The endpoint that answered waits what it asked.
    expect(await poll.listNodes()).toEqual([]);
    expect(waits.reduce((a, b) => a + b, 0)).toBe(3_000);
    expect(grants).toEqual([
      ["poll", 0],
      ["policy", 0],
      ["poll", 3_000],
    ]);
  });

  it("holds every caller once several endpoints answered 429 at once: the key's budget is spent", async () => {
    const url = await serve((req, res) => {
      if (req.url?.includes("/nodes") || req.url?.includes("/templates")) {
        res.writeHead(429, { "retry-after": "5" }).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    });
    const { limiter, waits } = budget();
    const c = client({ apiUrl: url, retries: 0, limiter, maxRetryAfterMs: 60_000 });
    await expect(c.listNodes()).rejects.toBeInstanceOf(PlatformHttpError);
    await expect(c.listTemplates()).rejects.toBeInstanceOf(PlatformHttpError);
    // A third endpoint waits for the holds, except health, which has a reserve of its own.
    expect((await c.health()).status).toBe("ok");
    expect(waits).toEqual([]);
    await c.withOwnNormalizer("probe").clusterOverview();
    expect(waits.reduce((a, b) => a + b, 0)).toBe(5_000);
  });

  it("retries a GET after the hold, and caps a Retry-After at maxRetryAfterMs, not the 2 s backoff cap", async () => {
    let n = 0;
    const url = await serve((_req, res) => {
      if (++n === 1) {
        res.writeHead(503, { "retry-after": "3600" }).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
    });
    const { limiter, waits } = budget();
    const c = client({
      apiUrl: url,
      retries: 1,
      timeoutMs: 10_000,
      limiter,
      maxRetryAfterMs: 10_000,
    });
    expect(await c.listNodes()).toEqual([]);
    expect(n).toBe(2);
    expect(waits.reduce((a, b) => a + b, 0)).toBe(10_000);
    // A poll request whose hold outlasts its timeout is not sent: it fails at once, as held.
    n = 0;
    const short = client({
      apiUrl: url,
      retries: 1,
      timeoutMs: 2_000,
      maxRetryAfterMs: 10_000,
      limiter: budget().limiter,
    });
    await expect(short.listNodes()).rejects.toMatchObject({ code: "ERR_PLATFORM_HELD" });
    expect(n).toBe(1);
  });

  it("without a limiter, sleeps a Retry-After itself, capped by maxRetryAfterMs", () => {
    const b = { baseMs: 100, capMs: 2_000, random: () => 0 };
    expect(backoffDelay(1, b, 5_000)).toBe(2_000);
    expect(backoffDelay(1, b, 5_000, 60_000)).toBe(5_000);
    expect(backoffDelay(1, b, 90_000, 60_000)).toBe(60_000);
  });
});

describe("E2B's hosted API (flavor e2b)", () => {
  it("calls the root paths, encodes filters as E2B documents them, sends the admin token to /nodes only, resumes by connect", async () => {
    const seen: Array<{ method: string; url: string; admin: string | undefined }> = [];
    const url = await serve((req, res) => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        admin: req.headers["x-admin-token"] as string | undefined,
      });
      const body = req.url?.includes("/connect") ? '{"sandboxID":"s1","templateID":"t"}' : "[]";
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
    const c = client({
      apiUrl: url,
      apiPrefix: "",
      flavor: "e2b",
      adminToken: "admin-secret-42",
    });
    await c.listSandboxes({ metadata: "team=ml ops&app=a&b", limit: 100 });
    await c.listNodes();
    await c.listTemplates();
    await c.resumeSandbox("s1", { timeout: 60 });
    const list = new URL(seen[0]?.url ?? "", url);
    expect(list.pathname).toBe("/v2/sandboxes");
    // Each key and value URL-encoded, joined with &; the parameter as a whole encoded once more.
    expect(list.searchParams.get("metadata")).toBe("team=ml%20ops&app=a&b=");
    expect(list.searchParams.get("state")).toBe("running,paused");
    expect(seen.map((r) => [r.method, new URL(r.url, url).pathname, r.admin])).toEqual([
      ["GET", "/v2/sandboxes", undefined],
      ["GET", "/nodes", "admin-secret-42"],
      ["GET", "/templates", undefined],
      ["POST", "/sandboxes/s1/connect", undefined],
    ]);
  });

  it("keeps the sandboxapi prefix, verbatim filters and resume by default", async () => {
    const seen: string[] = [];
    const url = await serve((req, res) => {
      seen.push(req.url ?? "");
      res.writeHead(200, { "content-type": "application/json" }).end('{"sandboxID":"s1"}');
    });
    const c = client({ apiUrl: url, retries: 0 });
    await c.listSandboxes({ metadata: "team=ml ops" }).catch(() => undefined);
    await c.resumeSandbox("s1");
    expect(new URL(seen[0] ?? "", url).pathname).toBe("/sandboxapi/v1/v2/sandboxes");
    expect(new URL(seen[0] ?? "", url).searchParams.get("metadata")).toBe("team=ml ops");
    expect(new URL(seen[0] ?? "", url).searchParams.get("state")).toBeNull();
    expect(new URL(seen[1] ?? "", url).pathname).toBe("/sandboxapi/v1/sandboxes/s1/resume");
  });
});
