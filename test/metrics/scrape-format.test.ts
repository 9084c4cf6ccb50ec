// The gzip of the cached body: cut into members compressed side by side, decompressing to the body.
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GZIP_SPLIT_BYTES, gzipChunks, splitBytes } from "../../src/metrics/scrape-format.js";

const bytes = (...xs: string[]) => xs.map((x) => Buffer.from(x, "latin1"));
const text = (runs: Buffer[][]) => runs.map((r) => Buffer.concat(r).toString("latin1"));

describe("splitBytes", () => {
  it("cuts the bytes into runs of about equal size, in order, Buffers cut where a run ends", () => {
    expect(text(splitBytes(bytes("abcd", "ef", "ghij"), 2, 0))).toEqual(["abcde", "fghij"]);
    expect(text(splitBytes(bytes("abcdefghij"), 2, 0))).toEqual(["abcde", "fghij"]);
    expect(text(splitBytes(bytes("abcde", "fghij"), 2, 0))).toEqual(["abcde", "fghij"]);
  });

  it("keeps one run below the size worth splitting, or with one lane", () => {
    expect(text(splitBytes(bytes("abcd", "ef"), 2, 7))).toEqual(["abcdef"]);
    expect(text(splitBytes(bytes("abcd", "ef"), 1, 0))).toEqual(["abcdef"]);
    expect(splitBytes([], 2, 0)).toEqual([[]]);
  });

  it("loses, repeats and reorders no byte, whatever the chunks and lanes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 8 }),
        fc.integer({ min: 1, max: 5 }),
        (arrays, lanes) => {
          const chunks = arrays.map((a) => Buffer.from(a));
          const all = Buffer.concat(chunks);
          const runs = splitBytes(chunks, lanes, 0);
          expect(Buffer.concat(runs.flat()).equals(all)).toBe(true);
          expect(runs.length).toBeLessThanOrEqual(Math.max(1, lanes));
          const share = Math.ceil(all.length / lanes);
          expect(runs.length).toBeGreaterThan(0);
          for (const r of runs) {
            if (runs.length > 1) expect(Buffer.concat(r).length).toBeGreaterThan(0);
            expect(Buffer.concat(r).length).toBeLessThanOrEqual(share);
          }
        },
      ),
    );
  });
});

describe("gzipChunks", () => {
  it("compresses a big body as two members that each decompress to their half", async () => {
    const line = (i: number) => `sandbox_info{sandbox_id="s${i}",template_id="t${i % 7}"} 1\n`;
    const parts: string[] = [];
    let size = 0;
    for (let i = 0; size < GZIP_SPLIT_BYTES + 1000; i++) {
      const chunk = Array.from({ length: 1000 }, (_, j) => line(i * 1000 + j)).join("");
      parts.push(chunk);
      size += chunk.length;
    }
    const chunks = parts.map((p) => Buffer.from(p, "utf8"));
    const members = await gzipChunks(chunks);
    expect(members).toHaveLength(2);
    const halves = members.map((m) => gunzipSync(m));
    expect(Math.abs((halves[0]?.length ?? 0) - (halves[1]?.length ?? 0))).toBeLessThanOrEqual(1);
    expect(gunzipSync(Buffer.concat(members)).equals(Buffer.concat(chunks))).toBe(true);
  });

  it("compresses an empty body as one member", async () => {
    const members = await gzipChunks([]);
    expect(members).toHaveLength(1);
    expect(gunzipSync(members[0] as Buffer).length).toBe(0);
  });

  it("compresses a small body as one member", async () => {
    const members = await gzipChunks(bytes("a 1\n", "b 2\n"));
    expect(members).toHaveLength(1);
    expect(gunzipSync(members[0] as Buffer).toString("latin1")).toBe("a 1\nb 2\n");
  });
});
