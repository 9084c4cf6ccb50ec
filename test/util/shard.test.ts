import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fnv1a32, inShard, shardOf } from "../../src/util/shard.js";

/** FNV-1a over Buffer.from(s): the definition the fast version must match byte for byte. */
function reference(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, "utf8")) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

describe("fnv1a32", () => {
  it("matches the published FNV-1a 32-bit test vectors", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  it("hashes the UTF-8 bytes, including astral characters and lone surrogates", () => {
    for (const s of ["é", "€", "😀", "a😀b", "\ud800", "x\udc00y", "\ud83d"])
      expect(fnv1a32(s), JSON.stringify(s)).toBe(reference(s));
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => fnv1a32(s) === reference(s)),
      { numRuns: 2_000 },
    );
  });
});

describe("shardOf / inShard", () => {
  it("puts every id in exactly one shard, the same on every call", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 16 }), (id, total) => {
        const s = shardOf(id, total);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThan(total);
        expect(shardOf(id, total)).toBe(s);
        const owners = Array.from({ length: total }, (_, i) => i).filter((i) =>
          inShard(id, i, total),
        );
        expect(owners).toEqual([s]);
      }),
    );
  });

  it("puts everything in shard 0 when there is one shard", () => {
    expect(shardOf("anything", 1)).toBe(0);
    expect(inShard("anything", 0, 1)).toBe(true);
  });

  it("spreads ids roughly evenly", () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4_000; i++) (counts[shardOf(`i${i.toString(36)}xyz`, 4)] as number)++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });

  it("is pinned: these ids stay in these shards across releases", () => {
    expect([
      shardOf("sandbox-1", 4),
      shardOf("sandbox-2", 4),
      shardOf("i0123456789abcdefghi", 7),
    ]).toEqual([
      reference("sandbox-1") % 4,
      reference("sandbox-2") % 4,
      reference("i0123456789abcdefghi") % 7,
    ]);
  });
});
