// E2B mode's resume against platforms serving v1 connect, v2 connect or both: the client finds the
// route that answers, keeps it, and still reports a missing sandbox as not found.
import { createServer } from "node:http";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import type { ControlClient, RequestInfo } from "../../../src/platform/control/control.js";
import { PlatformNotFoundError } from "../../../src/platform/http-errors.js";
import { type Simulator, startSimulator } from "../../../src/simulator/index.js";
import { FakeClock } from "../../../src/util/clock.js";
import { testControl } from "../../helpers/control.js";
import { listenLoopback } from "../../helpers/loopback.js";

const V1 = "/sandboxes/{id}/connect";
const V2 = "/v2/sandboxes/{id}/connect";

/** How the platform answers a connect route it does not serve. */
type Missing = 404 | 405 | 410;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/**
 * A loopback E2B API serving the connect routes in `serves` (changeable while it runs) for the
 * sandbox `s1` only; every other path is a 404 as E2B's router sends it. It records each request.
 */
async function platform(serves: { routes: string[]; missing: Missing }) {
  const seen: Array<{ path: string; body: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "";
      seen.push({ path, body: Buffer.concat(chunks).toString("utf8") });
      const m = /^(\/v2)?\/sandboxes\/([^/]+)\/connect$/.exec(path);
      const route = m?.[1] ? V2 : V1;
      if (!m || !serves.routes.includes(route)) {
        const status = m ? serves.missing : 404;
        return res.writeHead(status, { "content-type": "text/plain" }).end("404 page not found");
      }
      if (m[2] !== "s1") {
        const body = JSON.stringify({ code: 404, message: `sandbox "${m[2]}" not found` });
        return res.writeHead(404, { "content-type": "application/json" }).end(body);
      }
      const body = {
        sandboxID: "s1",
        templateID: "t",
        envdVersion: route === V2 ? "0.6.13" : "0.3.7",
        envdAccessToken: route === V2 ? "ea_v2token" : "ea_v1token",
        domain: "e2b.example",
      };
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
  });
  const listening = await listenLoopback(server);
  closers.push(listening.close);
  const url = listening.url;
  return { url, paths: () => seen.map((s) => s.path), seen };
}

function e2bClient(url: string, requests: RequestInfo[] = []): ControlClient {
  const c = testControl({
    apiUrl: url,
    apiKey: "k",
    timeoutMs: 2_000,
    dispatcher: new Agent(),
    flavor: "e2b",
    apiPrefix: "",
    onRequest: (info) => requests.push(info),
  });
  closers.push(() => c.close());
  return c;
}

describe("E2B connect, v1 or v2", () => {
  it("resumes through v1 connect on a platform that serves only v1", async () => {
    const p = await platform({ routes: [V1], missing: 404 });
    const client = e2bClient(p.url);
    expect((await client.resumeSandbox("s1", { timeout: 60 })).id).toBe("s1");
    expect((await client.resumeSandbox("s1", { timeout: 60 })).id).toBe("s1");
    expect(p.paths()).toEqual(["/sandboxes/s1/connect", "/sandboxes/s1/connect"]);
    expect(JSON.parse(p.seen[0]?.body ?? "")).toEqual({ timeout: 60 });
  });

  it.each([404, 405, 410] as const)(
    "falls back to v2 connect when v1 answers %i, and keeps v2 from then on",
    async (missing) => {
      const p = await platform({ routes: [V2], missing });
      const requests: RequestInfo[] = [];
      const client = e2bClient(p.url, requests);
      const first = await client.resumeSandbox("s1", { timeout: 60 });
      expect(first).toMatchObject({ id: "s1", envdVersion: "0.6.13", accessToken: "ea_v2token" });
      expect((await client.resumeSandbox("s1", { timeout: 60 })).id).toBe("s1");
      expect(p.paths()).toEqual([
        "/sandboxes/s1/connect",
        "/v2/sandboxes/s1/connect",
        "/v2/sandboxes/s1/connect",
      ]);
      // v2 gets the same body: its timeout is optional, but the probe's time to live still counts.
      expect(JSON.parse(p.seen[1]?.body ?? "")).toEqual({ timeout: 60 });
      // A route found missing while looking for the one served is no platform error.
      const errors = requests.filter((r) => r.error !== undefined);
      expect(errors.map((r) => r.endpoint)).toEqual(missing === 404 ? [] : [V1]);
    },
  );

  it("reports a missing sandbox as not found, whichever routes the platform serves", async () => {
    for (const routes of [[V1], [V2], [V1, V2]]) {
      const p = await platform({ routes, missing: 404 });
      const client = e2bClient(p.url);
      await expect(client.resumeSandbox("gone", { timeout: 60 })).rejects.toBeInstanceOf(
        PlatformNotFoundError,
      );
      // Once a route has answered, its 404 is the answer: the other route is not asked.
      await client.resumeSandbox("s1", { timeout: 60 });
      const before = p.paths().length;
      await expect(client.resumeSandbox("gone", { timeout: 60 })).rejects.toBeInstanceOf(
        PlatformNotFoundError,
      );
      expect(p.paths().length - before, routes.join(" ")).toBe(1);
    }
  });

  it("moves to v2 when the platform retires v1 connect after serving it", async () => {
    const serves = { routes: [V1, V2], missing: 410 as Missing };
    const p = await platform(serves);
    const client = e2bClient(p.url);
    expect((await client.resumeSandbox("s1")).accessToken).toBe("ea_v1token");
    serves.routes = [V2];
    expect((await client.resumeSandbox("s1")).accessToken).toBe("ea_v2token");
    expect((await client.resumeSandbox("s1")).accessToken).toBe("ea_v2token");
    expect(p.paths()).toEqual([
      "/sandboxes/s1/connect",
      "/sandboxes/s1/connect",
      "/v2/sandboxes/s1/connect",
      "/v2/sandboxes/s1/connect",
    ]);
  });

  describe("against the simulator's E2B mode, which serves both", () => {
    let sim: Simulator;
    afterEach(async () => {
      await sim?.close();
    });

    it("resumes a paused sandbox with v1 connect and hands back its token and envd version", async () => {
      const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
      sim = await startSimulator({ flavor: "e2b", sandboxes: 0, clock });
      const client = e2bClient(sim.apiUrl);
      const template = sim.state.templates.find((t) => t.status === "ready")!.templateID;
      const created = await client.createSandbox({ templateId: template });
      await client.pauseSandbox(created.id);
      const resumed = await client.resumeSandbox(created.id, { timeout: 60 });
      expect(resumed).toMatchObject({
        id: created.id,
        accessToken: created.accessToken,
        envdVersion: created.envdVersion,
      });
      expect(created.envdVersion).toBe(sim.state.sandbox(created.id)?.envdVersion);
      expect(sim.state.sandbox(created.id)?.state).toBe("running");
      expect(sim.counters.get("POST /sandboxes/{id}/connect")).toBe(1);
      expect(sim.counters.get("POST /v2/sandboxes/{id}/connect")).toBe(0);
    });
  });
});
