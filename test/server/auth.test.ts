import bcrypt from "bcryptjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PasswordCompare } from "../../src/server/auth.js";
import { type RunningServer, type ServerDeps, startServer } from "../../src/server/server.js";
import type { WebConfig } from "../../src/server/web-config.js";
import { FakeClock, systemClock } from "../../src/util/clock.js";
import { stubServerDeps } from "../helpers/server.js";
import { until } from "../helpers/until.js";

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
    clock: systemClock,
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

  it("compares the same wrong password once, and refuses an unknown user after a compare of the same cost", async () => {
    const { server: s, compares, as } = await countingServer({ alice: ALICE_HASH });
    try {
      expect((await fetch(`${s.url}/metrics`, as("alice", "nope"))).status).toBe(401);
      expect((await fetch(`${s.url}/metrics`, as("alice", "nope"))).status).toBe(401);
      // bcrypt answers the same for the same password and hash: the refusal is remembered.
      expect(compares).toEqual([ALICE_HASH]);
      expect((await fetch(`${s.url}/metrics`, as("alice", "nope2"))).status).toBe(401);
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

  it("lets the routes exempt from auth in without credentials, and only those", async () => {
    const { server: s } = await countingServer(
      { alice: ALICE_HASH },
      {
        routes: [
          {
            method: "POST",
            path: "/webhooks/e2b",
            auth: "exemptable",
            exempt: true,
            acting: false,
            description: "receives webhook deliveries",
            handler: async (_req, _url, res) => {
              res.end("received\n");
            },
          },
        ],
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

describe("bcrypt basic auth under a flood of wrong passwords", () => {
  it("answers a remembered login with no compare, refuses the flood's excess 503 at once, and keeps places for other users", async () => {
    const BOB_HASH = bcrypt.hashSync("pw2", 4);
    // Wrong passwords are held until the test lets them go; every call is counted.
    const held: Array<{ password: string; release: () => void }> = [];
    const compared: string[] = [];
    let calls = 0;
    const compare: PasswordCompare = (password, hash) => {
      calls++;
      compared.push(password);
      if (password.startsWith("pw")) return bcrypt.compare(password, hash);
      return new Promise((resolve) => held.push({ password, release: () => resolve(false) }));
    };
    const web: WebConfig = {
      file: "/etc/web.yml",
      headers: {},
      users: { alice: ALICE_HASH, bob: BOB_HASH },
      http2: true,
    };
    const s = await startServer(
      "127.0.0.1:0",
      stubServerDeps({ webConfig: web, passwordCompare: compare }),
    );
    const as = (user: string, password: string) => ({
      headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` },
    });
    const letOneGo = () => (held.shift() as { release: () => void }).release();
    try {
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(200);
      expect(calls).toBe(1);
      // Guesses at alice's password, and at a user that does not exist, all at once.
      const FLOOD = 200;
      const answers: Response[] = [];
      const flood = [
        ...Array.from({ length: FLOOD }, (_, i) => as("alice", `wrong-${i}`)),
        ...Array.from({ length: FLOOD }, (_, i) => as("mallory", `guess-${i}`)),
      ].map((init) =>
        fetch(`${s.url}/metrics`, init).then((r) => {
          answers.push(r);
          return r;
        }),
      );
      // The first guess from this address (no wrong password from it yet) takes its priority
      // place and runs; three more each wait; the others are answered while those are held.
      const admitted = 7;
      expect(await until(() => answers.length === 2 * FLOOD - admitted)).toBe(true);
      expect(answers.every((r) => r.status === 503 && r.headers.get("retry-after") === "1")).toBe(
        true,
      );
      expect(held).toHaveLength(1);
      expect(calls).toBe(2);
      // The remembered login does not queue: answered with the compares still pending, none added.
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(200);
      expect(calls).toBe(2);
      expect(answers).toHaveLength(2 * FLOOD - admitted);
      // Bob's first login finds a place behind the held ones: answered after those, not refused.
      let bob: number | undefined;
      const first = fetch(`${s.url}/metrics`, as("bob", "pw2")).then((r) => {
        bob = r.status;
      });
      // FIFO: the running guess, alice's three waiting and the unknown users' three are ahead of
      // bob, whose address has its priority place taken (at most 7).
      for (let i = 0; i < admitted && bob === undefined && held.length > 0; i++) {
        letOneGo();
        await until(() => held.length > 0 || bob !== undefined);
      }
      await first;
      expect(bob).toBe(200);
      while (held.length > 0) {
        letOneGo();
        await until(() => held.length > 0 || answers.length === 2 * FLOOD);
      }
      await Promise.all(flood);
      expect(answers.filter((r) => r.status === 401)).toHaveLength(admitted);
      expect(calls).toBe(1 + admitted + 1);
      // Answers are remembered both ways: neither costs a compare again.
      expect((await fetch(`${s.url}/metrics`, as("bob", "pw2"))).status).toBe(200);
      const guessed = compared.find((p) => p.startsWith("wrong-")) as string;
      expect((await fetch(`${s.url}/metrics`, as("alice", guessed))).status).toBe(401);
      expect(calls).toBe(1 + admitted + 1);
    } finally {
      await s.close();
    }
  });

  it("gives a made-up user name per request only the unknown names' places: a configured user's first login still gets a compare and 200", async () => {
    const BOB_HASH = bcrypt.hashSync("pw2", 4);
    // Guesses are held until the test lets them go; every compare is recorded with its hash.
    const held: Array<() => void> = [];
    const compared: string[] = [];
    let holding = true;
    const compare: PasswordCompare = (password, hash) => {
      compared.push(hash);
      if (password.startsWith("pw") || !holding) return bcrypt.compare(password, hash);
      return new Promise((resolve) => held.push(() => resolve(false)));
    };
    const web: WebConfig = {
      file: "/etc/web.yml",
      headers: {},
      users: { alice: ALICE_HASH, bob: BOB_HASH },
      http2: true,
    };
    const s = await startServer(
      "127.0.0.1:0",
      stubServerDeps({ webConfig: web, passwordCompare: compare }),
    );
    const as = (user: string, password: string) => ({
      headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` },
    });
    const FLOOD = 200;
    const answers: number[] = [];
    try {
      // A new unknown name each time, and varying wrong passwords for alice, all at once.
      const flood = [
        ...Array.from({ length: FLOOD }, (_, i) => as(`nobody-${i}`, `guess-${i}`)),
        ...Array.from({ length: FLOOD }, (_, i) => as("alice", `wrong-${i}`)),
      ].map((init) => fetch(`${s.url}/metrics`, init).then((r) => answers.push(r.status)));
      // One priority place for this address's first guess, three for every unknown name
      // together, three for alice: the rest 503 at once.
      const admitted = 7;
      // At most 1 running and 8 waiting: wait for those answers, then for the flood to settle.
      expect(await until(() => answers.length >= 2 * FLOOD - 9)).toBe(true);
      await until(() => answers.length === 2 * FLOOD - admitted, 500);
      // Bob's first login takes a free place rather than a 503 at once (the flood's answer)...
      let bob: number | undefined;
      const first = fetch(`${s.url}/metrics`, as("bob", "pw2")).then((r) => {
        bob = r.status;
      });
      await until(() => bob !== undefined, 500);
      expect(bob).toBeUndefined();
      // ...and gets a compare against his hash once the seven ahead of him end.
      for (let i = 0; i < admitted && bob === undefined; i++) {
        await until(() => held.length > 0 || bob !== undefined);
        held.shift()?.();
      }
      await first;
      expect(bob).toBe(200);
      expect(compared.filter((h) => h === BOB_HASH)).toHaveLength(1);
      expect(answers.filter((st) => st === 503)).toHaveLength(2 * FLOOD - admitted);
      while (answers.length < 2 * FLOOD && (await until(() => held.length > 0, 1_000)))
        held.shift()?.();
      await Promise.all(flood);
      // Refused the same way whether the name exists or not: 401 after a compare, or 503.
      expect(answers.filter((st) => st === 401)).toHaveLength(admitted);
    } finally {
      holding = false;
      for (const release of held.splice(0)) release();
      // Answered connections go idle, so close does not wait out their keep-alive.
      await until(() => answers.length === 2 * FLOOD, 3_000);
      await s.close();
    }
  });

  it("writes one refused-login warning a minute on the clock it is given, the next with the count held back", async () => {
    const clock = new FakeClock(1_000_000);
    const warnings: Array<{ obj: object; msg: string }> = [];
    const held: Array<() => void> = [];
    let holding = true;
    const web: WebConfig = {
      file: "/etc/web.yml",
      headers: {},
      users: { alice: ALICE_HASH },
      http2: true,
    };
    const s = await startServer(
      "127.0.0.1:0",
      stubServerDeps({
        webConfig: web,
        clock,
        logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
        passwordCompare: async () =>
          holding && new Promise((resolve) => held.push(() => resolve(false))),
      }),
    );
    const as = (password: string) => ({
      headers: { authorization: `Basic ${Buffer.from(`alice:${password}`).toString("base64")}` },
    });
    const answers: number[] = [];
    const guess = (password: string) =>
      fetch(`${s.url}/metrics`, as(password)).then((r) => answers.push(r.status));
    const refusals = () => warnings.filter((w) => w.msg.startsWith("listener login refused (503)"));
    try {
      // Four of alice's guesses get places (the address's priority one, and three of hers); the
      // other six are refused, with one line.
      const flood = Array.from({ length: 10 }, (_, i) => guess(`wrong-${i}`));
      expect(await until(() => answers.length === 6)).toBe(true);
      expect(refusals()).toHaveLength(1);
      clock.advance(60_000);
      await guess("wrong-10");
      expect(answers.at(-1)).toBe(503);
      expect(refusals()).toHaveLength(2);
      expect(refusals()[1]?.obj).toMatchObject({ suppressed: 5 });
      while (answers.length < 11 && (await until(() => held.length > 0, 1_000))) held.shift()?.();
      await Promise.all(flood);
    } finally {
      holding = false;
      for (const release of held.splice(0)) release();
      // Answered connections go idle, so close does not wait out their keep-alive.
      await until(() => answers.length === 11, 3_000);
      await s.close();
    }
  });

  it("keeps a verified login across a reload that keeps the user's hash", async () => {
    const { server: s, compares, as } = await countingServer({ alice: ALICE_HASH });
    try {
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(200);
      const bob = bcrypt.hashSync("pw2", 4);
      s.setWebConfig({
        file: "/etc/web.yml",
        headers: {},
        users: { alice: ALICE_HASH, bob },
        http2: true,
      });
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(200);
      expect(compares).toEqual([ALICE_HASH]);
      // A user removed by a reload is refused, whatever was remembered for it.
      s.setWebConfig({ file: "/etc/web.yml", headers: {}, users: { bob }, http2: true });
      expect((await fetch(`${s.url}/metrics`, as("alice", "pw"))).status).toBe(401);
    } finally {
      await s.close();
    }
  });
});
