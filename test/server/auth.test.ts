import bcrypt from "bcryptjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, type ServerDeps, startServer } from "../../src/server/server.js";
import type { WebConfig } from "../../src/server/web-config.js";
import { stubServerDeps } from "../helpers/server.js";

let server: RunningServer;
/** Cost 4: the lowest bcrypt allows, so the tests stay fast. */
const ALICE_HASH = bcrypt.hashSync("pw", 4);

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
    auth: { bearerToken: "tok-1", basicUsers: { alice: ALICE_HASH } },
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

  it("accepts basic auth against the bcrypt hash", async () => {
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
    const closed = await startServer(
      "127.0.0.1:0",
      stubServerDeps({
        auth: { bearerToken: "" },
      }),
    );
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

/** A server whose basic-auth users come from a web config; every bcrypt compare is counted. */
async function countingServer(users: Record<string, string>, extra: Partial<ServerDeps> = {}) {
  const compares: string[] = [];
  const web: WebConfig = { file: "/etc/web.yml", headers: {}, users, http2: true };
  const s = await startServer(
    "127.0.0.1:0",
    stubServerDeps({
      webConfig: web,
      passwordCompare: (password, hash) => {
        compares.push(hash);
        return bcrypt.compare(password, hash);
      },
      ...extra,
    }),
  );
  const as = (user: string, password: string) => ({
    headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` },
  });
  return { server: s, compares, as };
}

describe("bcrypt basic auth from the web config", () => {
  it("pays bcrypt once per credential: later scrapes hit the cache", async () => {
    const { server: s, compares, as } = await countingServer({ alice: ALICE_HASH });
    try {
      for (let i = 0; i < 3; i++)
        expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(200);
      expect(compares).toEqual([ALICE_HASH]);
    } finally {
      await s.close();
    }
  });

  it("shares one compare between concurrent scrapes with the same credential", async () => {
    const { server: s, compares, as } = await countingServer({ alice: ALICE_HASH });
    try {
      const answers = await Promise.all(
        [1, 2, 3, 4].map(() => fetch(`${s.url}/metrics`, as("alice", "pw"))),
      );
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(compares).toHaveLength(1);
    } finally {
      await s.close();
    }
  });

  it("never remembers a refusal, and refuses an unknown user after a compare of the same cost", async () => {
    const { server: s, compares, as } = await countingServer({ alice: ALICE_HASH });
    try {
      expect((await fetch(`${s.url}/metrics`, as("alice", "nope"))).status).toBe(401);
      expect((await fetch(`${s.url}/metrics`, as("alice", "nope"))).status).toBe(401);
      expect(compares).toEqual([ALICE_HASH, ALICE_HASH]);
      // An unknown user is compared against a stand-in hash, so timing does not reveal users.
      expect((await fetch(`${s.url}/metrics`, as("mallory", "pw"))).status).toBe(401);
      expect(compares).toHaveLength(3);
      expect(compares[2]).not.toBe(ALICE_HASH);
    } finally {
      await s.close();
    }
  });

  it("asks a new compare after a reload changes the user's hash, and drops the old password", async () => {
    const { server: s, compares, as } = await countingServer({ alice: ALICE_HASH });
    try {
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(200);
      const next = bcrypt.hashSync("pw2", 4);
      s.setWebConfig({ file: "/etc/web.yml", headers: {}, users: { alice: next }, http2: true });
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(401);
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw2"))).status).toBe(200);
      expect(compares).toEqual([ALICE_HASH, next, next]);
    } finally {
      await s.close();
    }
  });

  it("lets the paths listed in openPaths in without credentials, and only those", async () => {
    const { server: s } = await countingServer(
      { alice: ALICE_HASH },
      {
        openPaths: ["/webhooks/e2b"],
        routes: {
          "/webhooks/e2b": async (_req, _url, res) => {
            res.end("received\n");
          },
        },
      },
    );
    try {
      expect((await fetch(`${s.url}/webhooks/e2b`, { method: "POST" })).status).toBe(200);
      expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    } finally {
      await s.close();
    }
  });

  it("serves every path openly when the file has no users", async () => {
    const { server: s } = await countingServer({});
    try {
      expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});
