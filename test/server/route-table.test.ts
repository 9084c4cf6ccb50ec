// The route table over a real socket: every route answers on the methods it declares and 405 on
// the others, the listener's auth follows each record, the landing page is generated from the
// table, and the start-up warning reads `acting`.
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { probeRoute } from "../../src/probe/probe-handler.js";
import { E2B_WEBHOOK_PATH, e2bWebhookRoute } from "../../src/server/e2b-webhook.js";
import type { Route, ServerDeps } from "../../src/server/server.js";
import { systemClock } from "../../src/util/clock.js";
import { serveListener } from "../helpers/serve.js";

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const TOKEN = { authorization: "Bearer listener-token" };
/** Every method a test tries on a route, declared or not. */
const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE"];

/**
 * The probe's own record (method, auth, acting, description, example) with a stand-in handler
 * that, like the real one with two modules, answers 400 without a module and 200 with "quick".
 */
function probe(calls: string[]): Route {
  const real = probeRoute({
    modules: [
      { module: "quick", id: {} as never, labelNames: [], totalTimeoutMs: 1, runOnDemand: noProbe },
      { module: "files", id: {} as never, labelNames: [], totalTimeoutMs: 1, runOnDemand: noProbe },
    ],
    clock: systemClock,
    monotonic: () => 0,
    minIntervalMs: 0,
    namespace: "sandbox",
  });
  return {
    ...real,
    handler: async (req, url, res) => {
      calls.push(`${req.method} ${url.pathname}`);
      res.statusCode = url.searchParams.get("module") === "quick" ? 200 : 400;
      res.end();
    },
  };
}

async function noProbe(): Promise<undefined> {
  throw new Error("the stand-in handler runs no probe");
}

/** The real webhook route (its record and handler), exempt or not, with its registry. */
function webhook(exempt: boolean): { route: Route; count(result: string): Promise<number> } {
  const registry = new Registry();
  const route = e2bWebhookRoute({
    secret: () => "whsec-route-table",
    sink: { accept: () => true },
    parse: () => {
      throw new Error("no event is parsed here");
    },
    limits: { maxBodyBytes: 4096, bodyTimeoutMs: 5_000, maxInFlight: 4, maxInFlightBytes: 65_536 },
    authExempt: exempt,
    clock: systemClock,
    registry,
    namespace: "sandbox",
    logger: { warn: () => {}, debug: () => {} },
  });
  return {
    route,
    async count(result) {
      const metric = await registry.getSingleMetric("sandbox_webhook_deliveries_total")?.get();
      return metric?.values.find((v) => v.labels.result === result)?.value ?? Number.NaN;
    },
  };
}

/** A server on `listen` with the stubs and /-/reload on, recording reloads and warnings. */
const serve = (extra: Partial<ServerDeps> = {}, listen = "127.0.0.1:0") =>
  serveListener(servers, { enableLifecycle: true, ...extra }, listen);

function methods(route: Route): readonly string[] {
  return typeof route.method === "string" ? [route.method] : route.method;
}

describe("the route table", () => {
  it("serves every route on the methods it declares, and answers 405 with Allow to any other", async () => {
    const calls: string[] = [];
    const hook = webhook(false);
    const { server, url, reloads } = await serve({ routes: [probe(calls), hook.route] });
    expect(server.routes.map((r) => `${methods(r).join(",")} ${r.path}`)).toEqual([
      "GET,HEAD /metrics",
      "GET,HEAD /status",
      "GET,HEAD /healthz",
      "GET,HEAD /readyz",
      "POST,PUT /-/reload",
      "GET,HEAD /",
      "GET /probe",
      "POST /webhooks/e2b",
    ]);
    // What each route's own handler answers, so a 200 from somewhere else would not pass.
    const answered: Record<string, string> = {};
    for (const route of server.routes)
      for (const method of methods(route)) {
        const res = await fetch(`${url}${route.example ?? route.path}`, { method });
        const body = await res.text();
        answered[`${method} ${route.path}`] = `${res.status} ${body.slice(0, 15)}`;
      }
    expect(answered).toEqual({
      "GET /metrics": "200 m 1\n",
      "HEAD /metrics": "200 ",
      "GET /status": "200 {}\n",
      "HEAD /status": "200 ",
      "GET /healthz": "200 ok\n",
      "HEAD /healthz": "200 ",
      "GET /readyz": "200 ready\n",
      "HEAD /readyz": "200 ",
      "POST /-/reload": "200 reloaded\n",
      "PUT /-/reload": "200 reloaded\n",
      "GET /": "200 <!doctype html>",
      "HEAD /": "200 ",
      "GET /probe": "200 ",
      // The route's own signature check: no listener auth here, so the handler ran.
      "POST /webhooks/e2b": "401 bad signature\n",
    });
    expect(reloads).toEqual([1, 2]);
    expect(calls).toEqual(["GET /probe"]);

    for (const route of server.routes) {
      const allow = methods(route).join(", ");
      for (const method of METHODS.filter((m) => !methods(route).includes(m))) {
        const res = await fetch(`${url}${route.example ?? route.path}`, { method });
        expect([route.path, method, res.status, res.headers.get("allow")]).toEqual([
          route.path,
          method,
          405,
          allow,
        ]);
        expect(await res.text()).toBe(method === "HEAD" ? "" : "method not allowed\n");
      }
    }
    // No handler ran for a refused method; the webhook counts its own.
    expect(reloads).toEqual([1, 2]);
    expect(calls).toEqual(["GET /probe"]);
    expect(await hook.count("method")).toBe(4);
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });

  it("refuses a feature route on a path the table already has", async () => {
    const calls: string[] = [];
    const shadow: Route = { ...probe(calls), path: "/metrics" };
    await expect(serve({ routes: [shadow] })).rejects.toThrow("two routes for /metrics");
    await expect(serve({ routes: [probe(calls), probe(calls)] })).rejects.toThrow(
      "two routes for /probe",
    );
  });
});

describe("the listener's auth, by each route's record", () => {
  it.each([false, true])(
    "asks credentials of authenticated routes, never of open ones, and of the webhook unless exempt (%s)",
    async (exempt) => {
      const hook = webhook(exempt);
      const { server, url } = await serve({
        auth: { bearerToken: "listener-token" },
        routes: [probe([]), hook.route],
      });
      const bare: Record<string, string> = {};
      const withToken: Record<string, number> = {};
      for (const route of server.routes) {
        const method = methods(route)[0] as string;
        const target = `${url}${route.example ?? route.path}`;
        const res = await fetch(target, { method });
        bare[route.path] = `${res.status} ${await res.text()}`;
        withToken[route.path] = (await fetch(target, { method, headers: TOKEN })).status;
      }
      const refused = "401 unauthorized\n";
      expect(bare).toEqual({
        "/metrics": refused,
        "/status": refused,
        "/healthz": "200 ok\n",
        "/readyz": "200 ready\n",
        "/-/reload": refused,
        "/": refused,
        "/probe": refused,
        // Exempt: past the listener, to the signature check; else the listener's own 401.
        [E2B_WEBHOOK_PATH]: exempt ? "401 bad signature\n" : refused,
      });
      expect(await hook.count("unauthorized_listener")).toBe(exempt ? 0 : 1);
      expect(withToken).toEqual({
        "/metrics": 200,
        "/status": 200,
        "/healthz": 200,
        "/readyz": 200,
        "/-/reload": 200,
        "/": 200,
        "/probe": 200,
        [E2B_WEBHOOK_PATH]: 401,
      });
      // A path outside the table tells an unauthenticated caller nothing either.
      expect((await fetch(`${url}/nope`)).status).toBe(401);
      expect((await fetch(`${url}/nope`, { headers: TOKEN })).status).toBe(404);
    },
  );

  it("opens a route declared open, whatever its path", async () => {
    const open: Route = {
      method: "GET",
      path: "/-/open",
      auth: "open",
      acting: false,
      description: "an open page",
      handler: async (_req, _url, res) => {
        res.end("open\n");
      },
    };
    const { url } = await serve({ auth: { bearerToken: "listener-token" }, routes: [open] });
    expect((await fetch(`${url}/-/open`)).status).toBe(200);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
  });
});

describe("the landing page, generated from the table", () => {
  it("describes every route but itself, links the GET ones at their example, and every link answers 200", async () => {
    const { server, url } = await serve({ routes: [probe([]), webhook(false).route] });
    const html = await (await fetch(`${url}/`)).text();
    for (const route of server.routes.filter((r) => r.hidden !== true))
      expect([route.path, html.includes(route.description.replaceAll("&", "&amp;"))]).toEqual([
        route.path,
        true,
      ]);
    expect(html).not.toContain("this page");
    const hrefs = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1] ?? "");
    expect(hrefs).toEqual(["/metrics", "/status", "/healthz", "/readyz", "/probe?module=quick"]);
    const statuses: Record<string, number> = {};
    for (const h of hrefs) statuses[h] = (await fetch(`${url}${h}`)).status;
    expect(statuses).toEqual(Object.fromEntries(hrefs.map((h) => [h, 200])));
    // The bare path needs its parameter: that is why the page links the example.
    expect((await fetch(`${url}/probe`)).status).toBe(400);
    // Routes without GET are named with their methods, not linked.
    expect(html).toContain("<code>POST, PUT /-/reload</code>");
    expect(html).toContain(`<code>POST ${E2B_WEBHOOK_PATH}</code>`);
  });
});

describe("the warning about acting routes reachable without credentials", () => {
  const WARNING = /reachable beyond loopback without authentication/;
  const acting = (on: boolean, auth: Route["auth"] = "authenticated"): Route => ({
    ...probe([]),
    acting: on,
    auth,
  });

  it("names the routes whose record says they act, beyond loopback and without credentials", async () => {
    const { warnings } = await serve({ routes: [acting(true), webhook(true).route] }, "0.0.0.0:0");
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringMatching(WARNING)]);
    expect(warnings[0]?.obj).toMatchObject({ routes: ["/probe"] });
  });

  it("is not logged when no route acts", async () => {
    const { warnings } = await serve({ routes: [acting(false), webhook(true).route] }, "0.0.0.0:0");
    expect(warnings).toEqual([]);
  });

  it("is logged behind credentials only for an acting route the record opens", async () => {
    const auth = { bearerToken: "listener-token" };
    const closed = await serve({ auth, routes: [acting(true)] }, "0.0.0.0:0");
    expect(closed.warnings).toEqual([]);
    const opened = await serve({ auth, routes: [acting(true, "open")] }, "0.0.0.0:0");
    expect(opened.warnings.map((w) => w.obj)).toEqual([
      expect.objectContaining({ routes: ["/probe"] }),
    ]);
  });
});
