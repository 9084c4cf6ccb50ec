import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { SectionWriter } from "../../../src/metrics/exposition/section-writer.js";
import { GzipMember } from "../../../src/metrics/scrape-format.js";

describe("SectionWriter", () => {
  it("copies a long run of adjacent ranges in batches, byte for byte", () => {
    const old = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < old.length; i++) old[i] = (i * 7) & 0xff;
    const w = new SectionWriter(16);
    w.write("head\n", 5);
    for (let at = 0; at < old.length; at += 100) w.copy(old, at, Math.min(at + 100, old.length));
    w.write("tail\n", 5);
    expect(w.position).toBe(old.length + 10);
    const out = w.finish();
    expect(out.subarray(0, 5).toString()).toBe("head\n");
    expect(out.subarray(5, 5 + old.length).equals(old)).toBe(true);
    expect(out.subarray(5 + old.length).toString()).toBe("tail\n");
  });

  it("hands its sink every byte in order, across text batches, copies and a grown buffer", async () => {
    const old = Buffer.from("x".repeat(700_000));
    const pieces: Buffer[] = [];
    const member = new GzipMember();
    // A tiny first capacity: the buffer is replaced while earlier pieces are still being compressed.
    const w = new SectionWriter(16, (bytes) => {
      pieces.push(Buffer.from(bytes));
      member.write(bytes);
    });
    for (let i = 0; i < 20_000; i++) {
      const line = `line{n="${i}",v="é"} ${i}\n`;
      w.write(line, Buffer.byteLength(line));
      if (i % 1000 === 0) w.copy(old, i, i + 35_000);
    }
    w.write("end\n", 4);
    const out = w.finish();
    expect(pieces.length).toBeGreaterThan(5);
    expect(Buffer.concat(pieces).equals(out)).toBe(true);
    expect(gunzipSync(await member.end()).equals(out)).toBe(true);
  });
});

describe("GzipMember", () => {
  it("concatenates with other members into one body, and a dropped one rejects", async () => {
    const a = new GzipMember();
    a.write(Buffer.from("first "));
    a.write(Buffer.alloc(0));
    a.write(Buffer.from("part\n"));
    const b = new GzipMember();
    b.write(Buffer.from("second part\n"));
    const both = Buffer.concat(await Promise.all([a.end(), b.end()]));
    expect(gunzipSync(both).toString()).toBe("first part\nsecond part\n");
    const dropped = new GzipMember();
    dropped.write(Buffer.from("never ended"));
    dropped.drop();
    await expect(dropped.done).rejects.toThrow(/dropped/);
  });
});
