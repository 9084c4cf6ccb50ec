// A hostile client of the exporter's own listener: a flood of wrong basic-auth passwords for the
// right user name, from one address, while the right client scrapes from another, from its first
// scrape after a (re)start on. Real bcrypt (cost 10) on the listener's worker thread.
import { request } from "node:http";
import bcrypt from "bcryptjs";
import { describe, expect, it } from "vitest";
import { BcryptPool } from "../../src/server/bcrypt-pool.js";
import { startServer } from "../../src/server/server.js";
import { stubServerDeps } from "../helpers/server.js";
import { until as waitUntil } from "../helpers/until.js";

const USER = "prometheus";
const PASSWORD = "right-password";
/** Cost 10, as `htpasswd -nBC 10` writes it and the docs advise. */
const HASH = bcrypt.hashSync(PASSWORD, 10);
/**
 * Guesses sent at once, and at most in all per run: the flood goes on until the right client's
 * scrapes are done (however fast the machine answers), within this bound.
 */
const FLOOD_CONCURRENCY = 24;
const FLOOD_MAX = 50_000;
/** The right client's scrapes per run: one, then one after every STRIDE answers to the flood. */
const SCRAPES = 8;
const STRIDE = 25;
const RESTARTS = 3;

interface Answer {
  status: number;
  ms: number;
}

/** GET /metrics as `user:password` from `localAddress`, on a new connection. */
function scrape(port: number, localAddress: string, password: string): Promise<Answer> {
  const started = performance.now();
  const auth = `Basic ${Buffer.from(`${USER}:${password}`).toString("base64")}`;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, localAddress, path: "/metrics", agent: false },
      (res) => {
        res.resume();
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }),
        );
      },
    );
    req.setHeader("authorization", auth);
    req.on("error", reject);
    req.end();
  });
}

/** The shared wait, with room for the flood's 30,000 timer turns. */
const until = (done: () => boolean): Promise<boolean> => waitUntil(done, 30_000);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** One start of the listener: the flood from 127.0.0.2, the right client's scrapes from 127.0.0.1. */
async function run(pool: BcryptPool) {
  const compareMs: number[] = [];
  const s = await startServer(
    "127.0.0.1:0",
    stubServerDeps({
      webConfig: { file: "/etc/web.yml", headers: {}, users: { [USER]: HASH }, http2: true },
      passwordCompare: async (password, hash) => {
        const t = performance.now();
        const ok = await pool.compare(password, hash);
        compareMs.push(performance.now() - t);
        return ok;
      },
    }),
  );
  const flood: Answer[] = [];
  let sent = 0;
  let stop = false;
  const guesser = async () => {
    while (!stop && sent < FLOOD_MAX) {
      const guess = `wrong-${sent++}`;
      flood.push(await scrape(s.port, "127.0.0.2", guess));
    }
  };
  try {
    const guessers = Array.from({ length: FLOOD_CONCURRENCY }, guesser);
    // The flood is on (its first compares running or waiting) before the right client's first scrape.
    expect(await until(() => sent >= FLOOD_CONCURRENCY)).toBe(true);
    const right: Answer[] = [];
    for (let i = 0; i < SCRAPES; i++) {
      expect(await until(() => flood.length >= i * STRIDE || sent >= FLOOD_MAX)).toBe(true);
      right.push(await scrape(s.port, "127.0.0.1", PASSWORD));
    }
    // The scrapes were interleaved with the flood: it is still guessing, until told to stop.
    const during = sent < FLOOD_MAX;
    stop = true;
    await Promise.all(guessers);
    return { right, flood, compareMs, during };
  } finally {
    await s.close();
  }
}

describe("a flood of wrong passwords for the right user name", () => {
  it("never refuses the right client, from its first scrape after each restart, and refuses the flood's excess at once", async () => {
    const pool = new BcryptPool(1);
    try {
      for (let r = 0; r < RESTARTS; r++) {
        const { right, flood, compareMs, during } = await run(pool);
        expect(during).toBe(true);
        expect(right.map((a) => a.status)).toEqual(Array(SCRAPES).fill(200));
        expect(flood.length).toBeGreaterThanOrEqual(SCRAPES * STRIDE);
        expect(flood.every((a) => a.status === 401 || a.status === 503)).toBe(true);
        const refused = flood.filter((a) => a.status === 503).map((a) => a.ms);
        const compared = flood.filter((a) => a.status === 401).map((a) => a.ms);
        // Bounded: most guesses are refused without a compare, and faster than one compare takes.
        expect(refused.length).toBeGreaterThan(flood.length / 2);
        expect(compareMs.length).toBeLessThanOrEqual(compared.length + 1);
        expect(median(refused)).toBeLessThan(median(compareMs));
      }
    } finally {
      await pool.close();
    }
  }, 120_000);
});
