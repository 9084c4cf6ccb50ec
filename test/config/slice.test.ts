import { describe, expect, it } from "vitest";
import { bool, int } from "../../src/config/fields.js";
import { composeSection, defineSlice } from "../../src/config/slice.js";

const row = (path: string) => ({ path, env: "E", kind: "int" as const, help: "h" });

describe("settings slices", () => {
  it("refuses a row whose path is not a field of its own slice", () => {
    expect(() =>
      defineSlice({ key: "poll", fields: { a: int(0).default(1) }, settings: [row("poll.b")] }),
    ).toThrow("settings row poll.b is not a field of the poll slice");
    expect(() =>
      defineSlice({ key: "poll", fields: { a: int(0).default(1) }, settings: [row("log.a")] }),
    ).toThrow("settings row log.a is not a field of the poll slice");
  });

  it("composes the slices of one key into one strict section, each slice's check applied", () => {
    const core = defineSlice({ key: "poll", fields: { a: int(0).default(1) }, settings: [] });
    const extra = defineSlice({
      key: "poll",
      fields: { b: bool.default(false), c: int(0).default(5) },
      settings: [row("poll.c")],
      check(s, ctx) {
        if (s.b && s.c < 10) ctx.addIssue({ code: "custom", path: ["c"], message: "at least 10" });
      },
    });
    const section = composeSection(core, extra);
    expect(section.parse({})).toEqual({ a: 1, b: false, c: 5 });
    expect(section.safeParse({ b: true }).error?.issues).toMatchObject([
      { path: ["c"], message: "at least 10" },
    ]);
    expect(section.safeParse({ d: 1 }).success).toBe(false);
  });

  it("refuses a field two slices declare, and slices of different keys", () => {
    const a = defineSlice({ key: "poll", fields: { x: int(0).default(1) }, settings: [] });
    const b = defineSlice({ key: "poll", fields: { x: int(0).default(2) }, settings: [] });
    const c = defineSlice({ key: "log", fields: { y: int(0).default(2) }, settings: [] });
    expect(() => composeSection(a, b)).toThrow("setting poll.x is declared by two slices");
    expect(() => composeSection(a, c)).toThrow("slices of poll and log mixed");
  });
});
