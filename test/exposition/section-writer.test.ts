import { describe, expect, it } from "vitest";
import { SectionWriter } from "../../src/exposition/section-writer.js";

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
});
