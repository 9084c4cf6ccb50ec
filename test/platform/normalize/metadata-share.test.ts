// MetadataShare: one frozen map per metadata content, found by a hash of the pairs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MetadataShare } from "../../../src/platform/normalize/metadata-share.js";

describe("MetadataShare", () => {
  it("hands out one frozen map per content, pairs in record order, and keeps the first copy", () => {
    const share = new MetadataShare(100);
    const a = share.share({ team: "ml", env: "prod" });
    expect(Object.isFrozen(a)).toBe(true);
    expect(share.share({ team: "ml", env: "prod" })).toBe(a);
    // Another order, another value, a pair more or less, keys and values moved between pairs:
    // each is a content of its own.
    const others: Record<string, string>[] = [
      { env: "prod", team: "ml" },
      { team: "ml", env: "dev" },
      { team: "ml" },
      { team: "ml", env: "prod", x: "" },
      { teamm: "l", env: "prod" },
      { team: "mlenv", "": "prod" },
    ];
    const shared = others.map((m) => share.share({ ...m }));
    for (const m of shared) expect(m).not.toBe(a);
    expect(new Set(shared).size).toBe(others.length);
    others.forEach((m, i) => {
      expect(shared[i]).toEqual(m);
      expect(Object.keys(shared[i] as object)).toEqual(Object.keys(m));
    });
    expect(share.size).toBe(1 + others.length);
  });

  it("gives equal maps for equal contents and different maps for different ones, hash collisions or not", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 3 }),
          {
            maxLength: 60,
          },
        ),
        (maps) => {
          const share = new MetadataShare(1_000);
          const seen = new Map<string, Record<string, string>>();
          for (const m of maps) {
            const key = JSON.stringify(Object.entries(m));
            const got = share.share({ ...m });
            expect(Object.entries(got)).toEqual(Object.entries(m));
            const before = seen.get(key);
            if (before) expect(got).toBe(before);
            else {
              for (const other of seen.values()) expect(got).not.toBe(other);
              seen.set(key, got);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("starts over past its limit: a fleet of unique metadata does not grow it without bound", () => {
    const share = new MetadataShare(3);
    const first = share.share({ owner: "u0" });
    for (let i = 1; i < 3; i++) share.share({ owner: `u${i}` });
    expect(share.size).toBe(3);
    expect(share.share({ owner: "u3" })).toEqual({ owner: "u3" });
    expect(share.size).toBe(1);
    // Forgotten: an equal map is frozen anew.
    expect(share.share({ owner: "u0" })).not.toBe(first);
  });
});
