// The bcrypt gate's priority: a login from an address that sent no wrong password lately is
// compared before the guesses of an address that did, and is never refused for their sake.
import { request } from "node:http";
import bcrypt from "bcryptjs";
import { afterEach, describe, expect, it } from "vitest";
import type { PasswordCompare } from "../../src/server/auth.js";
import { SuspectSources, sourceOf } from "../../src/server/login-sources.js";
import { type RunningServer, startServer } from "../../src/server/server.js";
import { FakeClock } from "../../src/util/clock.js";
import { stubServerDeps } from "../helpers/server.js";
import { until } from "../helpers/until.js";

/** Cost 4: the lowest bcrypt allows, so the tests stay fast. */
const ALICE_HASH = bcrypt.hashSync("pw", 4);
const FLOOD = 50;

/** GET /metrics as alice:`password` from `localAddress` on a new connection; the status. */
function login(s: RunningServer, localAddress: string, password: string): Promise<number> {
  const auth = `Basic ${Buffer.from(`alice:${password}`).toString("base64")}`;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: s.port, localAddress, path: "/metrics", agent: false },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.setHeader("authorization", auth);
    req.on("error", reject);
    req.end();
  });
}

/** A listener for alice whose wrong passwords are held until released; compares in call order. */
async function holdingServer(clock = new FakeClock(1_000_000)) {
  const held: Array<() => void> = [];
  const compared: string[] = [];
  const compare: PasswordCompare = (password, hash) => {
    compared.push(password);
    if (password === "pw") return bcrypt.compare(password, hash);
    return new Promise((resolve) => held.push(() => resolve(false)));
  };
  const s = await startServer(
    "127.0.0.1:0",
    stubServerDeps({
      clock,
      webConfig: { file: "/etc/web.yml", headers: {}, users: { alice: ALICE_HASH }, http2: true },
      passwordCompare: compare,
    }),
  );
  return { s, held, compared, clock };
}

let open: { s: RunningServer; held: Array<() => void> } | undefined;
afterEach(async () => {
  if (!open) return;
  // Nothing stays held, so close does not wait on a request.
  for (let i = 0; i < 100 && open.held.length > 0; i++) {
    open.held.shift()?.();
    await until(() => open?.held.length !== 0, 50);
  }
  await open.s.close();
  open = undefined;
});

/** Starts FLOOD guesses at alice's password from `address`; resolves once all are answered. */
function flood(s: RunningServer, address: string, answers: number[]): Promise<unknown> {
  return Promise.all(
    Array.from({ length: FLOOD }, (_, i) =>
      login(s, address, `wrong-${i}`).then((st) => answers.push(st)),
    ),
  );
}

describe("bcrypt compares from an address with no wrong password go first", () => {
  it("compares the right client's first login next, ahead of the guesses waiting, and lets it in", async () => {
    const h = await holdingServer();
    open = h;
    // The flooding address sends one wrong password first: from then on it has no priority.
    const first = login(h.s, "127.0.0.2", "first-guess");
    expect(await until(() => h.held.length === 1)).toBe(true);
    h.held.shift()?.();
    expect(await first).toBe(401);
    const answers: number[] = [];
    const guesses = flood(h.s, "127.0.0.2", answers);
    // Alice's three places: one running, two waiting; the other guesses are refused at once.
    expect(await until(() => answers.length === FLOOD - 3)).toBe(true);
    expect(answers.every((st) => st === 503)).toBe(true);
    let right: number | undefined;
    const scrape = login(h.s, "127.0.0.1", "pw").then((st) => {
      right = st;
    });
    // Not refused: it waits for the one compare running, and is the next compared.
    expect(await until(() => right !== undefined, 200)).toBe(false);
    h.held.shift()?.();
    await scrape;
    expect(right).toBe(200);
    // The typo, the guess that was running, then the right password before the waiting guesses.
    expect(h.compared[2]).toBe("pw");
    const settled = () => h.held.length > 0 || answers.length === FLOOD;
    while (answers.length < FLOOD && (await until(settled))) h.held.shift()?.();
    await guesses;
    expect(answers.filter((st) => st === 401)).toHaveLength(3);
  });

  it("takes priority from an address for ten minutes after its wrong password, on the clock", async () => {
    const h = await holdingServer();
    open = h;
    const typo = login(h.s, "127.0.0.1", "typo");
    expect(await until(() => h.held.length === 1)).toBe(true);
    h.held.shift()?.();
    expect(await typo).toBe(401);
    // Another address floods: its first guess runs (it had no mark yet), three of alice's wait.
    const answers: number[] = [];
    const guesses = flood(h.s, "127.0.0.3", answers);
    expect(await until(() => answers.length === FLOOD - 4)).toBe(true);
    // The address that typed a wrong password shares alice's places, which are taken.
    expect(await login(h.s, "127.0.0.1", "pw")).toBe(503);
    h.clock.advance(10 * 60_000);
    // Unmarked again: it waits for the guess running, and goes before the three waiting.
    let later: number | undefined;
    const scrape = login(h.s, "127.0.0.1", "pw").then((st) => {
      later = st;
    });
    expect(await until(() => later !== undefined, 200)).toBe(false);
    h.held.shift()?.();
    await scrape;
    expect(later).toBe(200);
    const settled = () => h.held.length > 0 || answers.length === FLOOD;
    while (answers.length < FLOOD && (await until(settled))) h.held.shift()?.();
    await guesses;
  });
});

describe("login sources", () => {
  it("counts IPv4 by address, IPv4-mapped IPv6 as IPv4, and IPv6 by its /64", () => {
    expect(sourceOf("10.1.2.3")).toBe("10.1.2.3");
    expect(sourceOf("::ffff:10.1.2.3")).toBe("10.1.2.3");
    expect(sourceOf("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(sourceOf("2001:0db8:0001:0002::9")).toBe("2001:db8:1:2::/64");
    expect(sourceOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(sourceOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(sourceOf("::1")).toBe("0:0:0:0::/64");
    expect(sourceOf(undefined)).toBeUndefined();
  });

  it("remembers at most 4,096 marked addresses, forgetting the one marked longest ago", () => {
    const clock = new FakeClock(0);
    const suspects = new SuspectSources(() => clock.now());
    for (let i = 0; i < 4_097; i++) suspects.failed(`10.0.${i >> 8}.${i & 255}`);
    expect(suspects.has("10.0.0.0")).toBe(false);
    expect(suspects.has("10.0.0.1")).toBe(true);
    expect(suspects.has("10.0.16.0")).toBe(true);
    clock.advance(10 * 60_000);
    expect(suspects.has("10.0.16.0")).toBe(false);
  });
});
