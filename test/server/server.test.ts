import { afterEach, describe, expect, it } from "vitest";
import {
  isLoopback,
  type Route,
  type RunningServer,
  type ServerDeps,
} from "../../src/server/server.js";
import { serveListener } from "../helpers/serve.js";

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server on `listen` whose reload and warnings are recorded. */
const serve = (listen: string, extra: Partial<ServerDeps> = {}) =>
  serveListener(servers, extra, listen);

/** A route record as the probe declares it: acting, behind the listener's auth. */
const probeRoute: Route = {
  method: "GET",
  path: "/probe",
  auth: "authenticated",
  acting: true,
  description:
    "runs one probe of a module now and answers with its metrics (creates a sandbox; ?module=NAME, &debug=true for a trace)",
  handler: async (_req, _url, res) => {
    res.end("probed\n");
  },
};
const probeRoutes: ServerDeps["routes"] = [probeRoute];

describe("POST /-/reload (the lifecycle API)", () => {
  it("answers 403 in Prometheus' words and does not reload unless the lifecycle API is enabled", async () => {
    const { url, reloads } = await serve("127.0.0.1:0");
    for (const method of ["POST", "PUT"]) {
      const res = await fetch(`${url}/-/reload`, { method });
      expect(res.status).toBe(403);
      expect(await res.text()).toBe("Lifecycle API is not enabled.");
    }
    expect(reloads).toEqual([]);
  });

  it("reloads when the lifecycle API is enabled", async () => {
    const { url, reloads } = await serve("127.0.0.1:0", { enableLifecycle: true });
    const res = await fetch(`${url}/-/reload`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("reloaded\n");
    expect(reloads).toEqual([1]);
  });

  it("still refuses other methods with 405, enabled or not", async () => {
    for (const enableLifecycle of [false, true]) {
      const { url, reloads } = await serve("127.0.0.1:0", { enableLifecycle });
      const res = await fetch(`${url}/-/reload`);
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST, PUT");
      expect(reloads).toEqual([]);
    }
  });

  it("asks for credentials before saying whether the lifecycle API is on", async () => {
    const { url } = await serve("127.0.0.1:0", { auth: { bearerToken: "t" } });
    expect((await fetch(`${url}/-/reload`, { method: "POST" })).status).toBe(401);
  });
});

describe("the warning about an open listener that creates sandboxes", () => {
  const WARNING = /reachable beyond loopback without authentication/;

  it("is logged for 0.0.0.0 with the /probe route and no credentials", async () => {
    const { warnings } = await serve("0.0.0.0:0", { routes: probeRoutes });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toMatch(WARNING);
    expect(warnings[0]?.obj).toMatchObject({ listen: "0.0.0.0:0", routes: ["/probe"] });
  });

  it("is logged for :port, which listens on every interface", async () => {
    const { warnings } = await serve(":0", { routes: probeRoutes });
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringMatching(WARNING)]);
  });

  it("is not logged on loopback", async () => {
    expect((await serve("127.0.0.1:0", { routes: probeRoutes })).warnings).toEqual([]);
    expect((await serve("localhost:0", { routes: probeRoutes })).warnings).toEqual([]);
  });

  it("is not logged when the listener asks for a bearer token or basic auth", async () => {
    const bearer = await serve("0.0.0.0:0", { routes: probeRoutes, auth: { bearerToken: "t" } });
    expect(bearer.warnings).toEqual([]);
    const basic = await serve("0.0.0.0:0", {
      routes: probeRoutes,
      auth: {
        basicUsers: { alice: "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi" },
      },
    });
    expect(basic.warnings).toEqual([]);
  });

  it("is not logged without the /probe route", async () => {
    expect((await serve("0.0.0.0:0")).warnings).toEqual([]);
  });
});

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["::1", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["fe80::1", false],
  ])("%s -> %s", (address, loopback) => {
    expect(isLoopback(address)).toBe(loopback);
  });
});

describe("the landing page", () => {
  it("links the pages and names, without a link, a route that only takes POST deliveries", async () => {
    const { url } = await serve("127.0.0.1:0", {
      routes: [
        probeRoute,
        {
          method: "POST",
          path: "/webhooks/e2b",
          auth: "exemptable",
          acting: false,
          description: "receives webhook deliveries",
          handler: async (_req, _url, res) => {
            res.end();
          },
        },
      ],
    });
    const html = await (await fetch(`${url}/`)).text();
    expect(html).toContain('<a href="/metrics">');
    expect(html).toContain('<a href="/probe">');
    expect(html).toContain("<code>POST /webhooks/e2b</code>");
    expect(html).not.toContain('href="/webhooks/e2b"');
  });

  it("links /probe with the module it is given, says what it does, and every link answers 200", async () => {
    const { url } = await serve("127.0.0.1:0", {
      routes: [
        {
          ...probeRoute,
          example: "/probe?module=quick",
          handler: async (_req, u, res) => {
            res.statusCode = u.searchParams.get("module") === "quick" ? 200 : 400;
            res.end();
          },
        },
      ],
    });
    const html = await (await fetch(`${url}/`)).text();
    expect(html).toMatch(
      /<a href="\/probe\?module=quick">[^<]*<\/a> runs one probe of a module now/,
    );
    const hrefs = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1] ?? "");
    const statuses = await Promise.all(hrefs.map(async (h) => (await fetch(`${url}${h}`)).status));
    expect(Object.fromEntries(hrefs.map((h, i) => [h, statuses[i]]))).toEqual(
      Object.fromEntries(hrefs.map((h) => [h, 200])),
    );
  });
});
