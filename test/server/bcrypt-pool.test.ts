import bcrypt from "bcryptjs";
import { afterEach, describe, expect, it } from "vitest";
import { BcryptPool } from "../../src/server/bcrypt-pool.js";

const pools: BcryptPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function pool(size: number): BcryptPool {
  const p = new BcryptPool(size);
  pools.push(p);
  return p;
}

describe("BcryptPool", () => {
  it("answers as bcryptjs does, for $2a$, $2b$ and exporter-toolkit's $2y$ hashes", async () => {
    const p = pool(1);
    const hash = bcrypt.hashSync("pw", 4);
    expect(await p.compare("pw", hash)).toBe(true);
    expect(await p.compare("nope", hash)).toBe(false);
    expect(await p.compare("pw", hash.replace(/^\$2a\$/, "$2b$"))).toBe(true);
    // exporter-toolkit's stand-in for unknown users: bcrypt of "fakepassword", cost 10.
    const toolkit = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
    expect(await p.compare("fakepassword", toolkit)).toBe(true);
    expect(await p.compare("pw", "not a bcrypt hash")).toBe(false);
  });

  it("compares off the event loop: the loop keeps turning while a costly compare runs", async () => {
    const p = pool(1);
    const hash = bcrypt.hashSync("pw", 12);
    let turns = 0;
    let done = false;
    const compare = p.compare("pw", hash).finally(() => {
      done = true;
    });
    // Bounded: 100,000 turns are far more than a compare on a worker thread needs.
    while (!done && turns < 100_000) {
      await new Promise((r) => setImmediate(r));
      turns++;
    }
    expect(await compare).toBe(true);
    // On the main thread bcryptjs gives the loop a turn every 100 ms of hashing at best.
    expect(turns).toBeGreaterThan(50);
  });

  it("takes the compares in turn on its threads, and rejects what is left when closed", async () => {
    const p = pool(2);
    const hash = bcrypt.hashSync("pw", 4);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => p.compare(i % 2 ? "pw" : "no", hash)),
    );
    expect(answers).toEqual([false, true, false, true, false, true]);
    const slow = bcrypt.hashSync("pw", 12);
    const pending = expect(p.compare("pw", slow)).rejects.toThrow("closed");
    await p.close();
    await pending;
    await expect(p.compare("pw", hash)).rejects.toThrow("closed");
  });
});
