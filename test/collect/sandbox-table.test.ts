import { describe, expect, it } from "vitest";
import { SandboxTable } from "../../src/collect/sandbox-table.js";
import type { Sandbox } from "../../src/platform/types.js";

function sandbox(i: number, over: Partial<Sandbox> = {}): Sandbox {
  return {
    id: `s${i}`,
    templateId: `t${i % 3}`,
    state: i % 2 ? "running" : "paused",
    cpuCount: i % 8,
    memoryMB: 512 * (i % 4),
    startedAt: 1_795_000_000_000 + i,
    endAt: 1_796_000_000_000,
    domain: "x.test",
    metadata: { team: "ml" },
    extra: { disk_size_mb: 1 },
    ...over,
  };
}

/** What a compact table keeps of a sandbox. */
function fields(s: Sandbox): unknown[] {
  return [s.id, s.templateId, s.state, s.cpuCount, s.memoryMB, s.startedAt];
}

describe("SandboxTable", () => {
  it("gives back every row's id, template, state, CPU, memory and start, past its first growth", () => {
    const rows = Array.from({ length: 3000 }, (_, i) => sandbox(i));
    const b = SandboxTable.builder();
    for (const s of rows) b.push(s);
    const table = b.build();
    expect(table.length).toBe(3000);
    const back = [...table];
    expect(back.map(fields)).toEqual(rows.map(fields));
    // What nothing reads in compact mode is not kept.
    expect(back[5]).toMatchObject({ metadata: {}, extra: {}, domain: undefined, endAt: undefined });
  });

  it("keeps absent numbers absent and lets a repeated id replace its earlier row", () => {
    const b = SandboxTable.builder();
    b.push(sandbox(1, { cpuCount: undefined, memoryMB: undefined, startedAt: undefined }));
    b.push(sandbox(2));
    b.push(sandbox(1, { state: "killed", cpuCount: 0 }));
    const [first, second, ...rest] = b.build();
    expect(rest).toEqual([]);
    expect(first).toMatchObject({ id: "s1", state: "killed", cpuCount: 0 });
    expect(first?.memoryMB).toBe(512);
    expect(second?.id).toBe("s2");
    const c = SandboxTable.builder();
    c.push(sandbox(7, { cpuCount: undefined, memoryMB: undefined, startedAt: undefined }));
    const [only] = c.build();
    expect(only?.cpuCount).toBeUndefined();
    expect(only?.memoryMB).toBeUndefined();
    expect(only?.startedAt).toBeUndefined();
  });

  it("visits with forEach the same rows as iteration, absent numbers absent", () => {
    const b = SandboxTable.builder();
    for (let i = 0; i < 1500; i++)
      b.push(sandbox(i, i % 7 === 0 ? { cpuCount: undefined, startedAt: undefined } : {}));
    const table = b.build();
    const visited: unknown[] = [];
    table.forEach((s) => {
      visited.push(fields(s));
    });
    expect(visited).toEqual([...table].map(fields));
    expect(visited[7]).toEqual(["s7", "t1", "running", undefined, 1536, undefined]);
    // An array is a SandboxList too: the consumers' forEach works on either.
    const arr: Sandbox[] = [sandbox(1)];
    const ids: string[] = [];
    arr.forEach((s) => {
      ids.push(s.id);
    });
    expect(ids).toEqual(["s1"]);
  });

  it("holds exactly the rows pushed whether the expected count was too low, right or too high", () => {
    for (const [expected, pushed] of [
      [100, 3000],
      [3000, 3000],
      [3000, 2990],
      [3000, 50],
      [0, 0],
    ] as const) {
      const rows = Array.from({ length: pushed }, (_, i) => sandbox(1000 + i));
      const prior = SandboxTable.builder();
      for (let i = 0; i < expected; i++) prior.push(sandbox(i));
      const b = SandboxTable.builder(prior.build());
      for (const r of rows) b.push(r);
      // A repeated id still replaces its row, with the columns presized.
      if (pushed > 0) b.push(sandbox(1000, { state: "killed" }));
      const table = b.build();
      expect(table.length, `${expected}/${pushed}`).toBe(pushed);
      const want = rows.map(fields);
      if (pushed > 0) want[0] = fields(sandbox(1000, { state: "killed" }));
      expect([...table].map(fields)).toEqual(want);
    }
  });

  it("keeps every id right when the last walk's ids are shared: overlaps, gaps, disorder", () => {
    const walk = (ids: string[], previous?: SandboxTable) => {
      const b = SandboxTable.builder(previous);
      ids.forEach((id, i) => {
        b.push(sandbox(i, { id }));
      });
      return b.build();
    };
    const ids = (t: SandboxTable) => [...t].map((s) => s.id);
    const first = walk(["a", "c", "e", "g"]);
    const second = walk(["b", "c", "d", "g", "h"], first);
    expect(ids(second)).toEqual(["b", "c", "d", "g", "h"]);
    // Out of order midway: rows stay right (a repeated id replaces its row) and sharing stops.
    const third = walk(["c", "g", "d", "c", "h"], second);
    expect(ids(third)).toEqual(["c", "g", "d", "h"]);
    expect(ids(walk(["a", "b", "c"], third))).toEqual(["a", "b", "c"]);
    expect(ids(walk([], second))).toEqual([]);
  });
});
