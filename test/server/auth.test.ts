import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.js";

let server: RunningServer;
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

beforeAll(async () => {
  server = await startServer("127.0.0.1:0", {
    render: async () => ({
      body: [Buffer.from("m 1\n")],
      contentType: "text/plain; version=0.0.4",
    }),
    negotiate: () => "prometheus",
    status: () => ({ ok: true }),
    ready: () => true,
    logger: { warn: () => {} },
    auth: { bearerToken: "tok-1", basicUsers: { alice: sha("pw") } },
  });
});
afterAll(() => server.close());

describe("listener authentication", () => {
  it("refuses /metrics without credentials", async () => {
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain("Basic");
  });

  it("accepts the bearer token and refuses a wrong one", async () => {
    expect(
      (await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer tok-1" } })).status,
    ).toBe(200);
    expect(
      (await fetch(`${server.url}/metrics`, { headers: { authorization: "Bearer tok-2" } })).status,
    ).toBe(401);
  });

  it("accepts basic auth against the SHA-256 hash", async () => {
    const ok = `Basic ${Buffer.from("alice:pw").toString("base64")}`;
    const bad = `Basic ${Buffer.from("alice:nope").toString("base64")}`;
    expect((await fetch(`${server.url}/status`, { headers: { authorization: ok } })).status).toBe(
      200,
    );
    expect((await fetch(`${server.url}/status`, { headers: { authorization: bad } })).status).toBe(
      401,
    );
  });

  it("keeps /healthz and /readyz open for orchestrators", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it("stays closed when the configured bearer token is empty (an empty token file)", async () => {
    const closed = await startServer("127.0.0.1:0", {
      render: async () => ({ body: [Buffer.from("m 1\n")], contentType: "text/plain" }),
      negotiate: () => "prometheus",
      status: () => ({}),
      ready: () => true,
      logger: { warn: () => {} },
      auth: { bearerToken: "" },
    });
    try {
      expect((await fetch(`${closed.url}/metrics`)).status).toBe(401);
      const empty = { headers: { authorization: "Bearer " } };
      expect((await fetch(`${closed.url}/metrics`, empty)).status).toBe(401);
      expect((await fetch(`${closed.url}/healthz`)).status).toBe(200);
    } finally {
      await closed.close();
    }
  });

  it("rejects methods other than GET/HEAD on /metrics", async () => {
    const res = await fetch(`${server.url}/metrics`, {
      method: "POST",
      headers: { authorization: "Bearer tok-1" },
    });
    expect(res.status).toBe(405);
  });
});
