import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  forEachFullRow,
  forEachRow,
  SandboxTable,
  visitFullRows,
} from "../../src/collect/sandbox-table.js";
import { PROBE_TAG_KEY, type Sandbox } from "../../src/platform/types.js";
import { idOrder } from "../../src/util/id-order.js";

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

/** What a compact table keeps of a sandbox, as forEachFullRow passes it. */
function fields(s: Sandbox): unknown[] {
  const probe = Object.hasOwn(s.metadata, PROBE_TAG_KEY);
  return [s.id, s.templateId, s.state, s.cpuCount, s.memoryMB, s.startedAt, s.endAt, probe];
}

describe("SandboxTable", () => {
  it("gives back every row's id, template, state, CPU, memory, start and end, past its first growth", () => {
    const rows = Array.from({ length: 3000 }, (_, i) => sandbox(i));
    const b = SandboxTable.builder();
    for (const s of rows) b.push(s);
    const table = b.build();
    expect(table.length).toBe(3000);
    const back = [...table];
    // Out of id order ("s10" < "s2"): the table comes back sorted by id.
    const byId = [...rows].sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(back.map(fields)).toEqual(byId.map(fields));
    // What nothing reads in compact mode is not kept.
    expect(back[5]).toMatchObject({ metadata: {}, extra: {}, domain: undefined });
    expect(back[5]?.endAt).toBe(1_796_000_000_000);
  });

  it("keeps absent numbers absent and lets a repeated id replace its earlier row", () => {
    const b = SandboxTable.builder();
    b.push(
      sandbox(1, {
        cpuCount: undefined,
        memoryMB: undefined,
        startedAt: undefined,
        endAt: undefined,
      }),
    );
    b.push(sandbox(2));
    b.push(sandbox(1, { state: "killed", cpuCount: 0 }));
    const [first, second, ...rest] = b.build();
    expect(rest).toEqual([]);
    expect(first).toMatchObject({ id: "s1", state: "killed", cpuCount: 0 });
    expect(first?.memoryMB).toBe(512);
    expect(second?.id).toBe("s2");
    const c = SandboxTable.builder();
    c.push(
      sandbox(7, { cpuCount: undefined, memoryMB: undefined, startedAt: undefined, endAt: 0 }),
    );
    c.push(sandbox(8, { endAt: undefined }));
    const [only, noEnd] = c.build();
    expect(only?.cpuCount).toBeUndefined();
    expect(only?.memoryMB).toBeUndefined();
    expect(only?.startedAt).toBeUndefined();
    // 0 is a value (the normalizer never makes one); only an absent end time is absent.
    expect(only?.endAt).toBe(0);
    expect(noEnd?.endAt).toBeUndefined();
  });

  it("visits with forEachFullRow the same rows as iteration, as values, absent numbers absent", () => {
    const b = SandboxTable.builder();
    for (let i = 0; i < 1500; i++)
      b.push(
        sandbox(
          i,
          i % 7 === 0 ? { cpuCount: undefined, startedAt: undefined, endAt: undefined } : {},
        ),
      );
    const table = b.build();
    const visited: unknown[] = [];
    forEachFullRow(table, (...row) => {
      visited.push(row);
    });
    expect(visited).toEqual([...table].map(fields));
    expect(visited.find((v) => (v as unknown[])[0] === "s7")).toEqual([
      "s7",
      "t1",
      "running",
      undefined,
      1536,
      undefined,
      undefined,
      false,
    ]);
    // forEachRow reads the same rows.
    const short: unknown[] = [];
    forEachRow(table, (id, templateId, state, cpu, memory, started) => {
      short.push([id, templateId, state, cpu, memory, started]);
    });
    expect(short).toEqual(visited.map((v) => (v as unknown[]).slice(0, 6)));
    // An array of records is a SandboxList too: the same visitor reads it.
    const arr: Sandbox[] = [sandbox(1), sandbox(2, { metadata: { [PROBE_TAG_KEY]: "x" } })];
    const rows: unknown[] = [];
    forEachFullRow(arr, (...row) => {
      rows.push(row);
    });
    expect(rows).toEqual(arr.map(fields));
    expect(rows.map((r) => (r as unknown[])[7])).toEqual([false, true]);
  });

  it("visits records in slices, yielding between them, and a table at once", () => {
    const arr = Array.from({ length: 25 }, (_, i) => sandbox(i));
    const b = SandboxTable.builder();
    for (const s of arr) b.push(s);
    for (const [list, yields] of [
      [arr, 2],
      [b.build(), 0],
    ] as const) {
      const seen: string[] = [];
      const steps = visitFullRows(list, (id) => seen.push(id), 10);
      let n = 0;
      while (!steps.next().done) n++;
      expect(n).toBe(yields);
      expect(seen).toHaveLength(25);
    }
  });

  it("keeps of the metadata only the probe tag, through sorting", () => {
    const b = SandboxTable.builder();
    const tagged = (i: number, tag: string) =>
      sandbox(i, { metadata: { team: "ml", [PROBE_TAG_KEY]: tag } });
    for (const s of [tagged(9, "one"), sandbox(8), tagged(7, "two"), tagged(6, "one")]) b.push(s);
    const table = b.build();
    const meta = (list: Iterable<Sandbox>) => [...list].map((s) => [s.id, s.metadata]);
    expect(meta(table)).toEqual([
      ["s6", { [PROBE_TAG_KEY]: "one" }],
      ["s7", { [PROBE_TAG_KEY]: "two" }],
      ["s8", {}],
      ["s9", { [PROBE_TAG_KEY]: "one" }],
    ]);
  });

  it("codes a template or state by its value, however the values alternate", () => {
    // a, b, a: the last value added is b, the last one seen is a.
    const b = SandboxTable.builder();
    for (const [i, t] of ["a", "b", "a", "a", "c", "b"].entries())
      b.push(sandbox(i, { templateId: t, state: i % 2 ? "paused" : "running" }));
    expect([...b.build()].map((s) => [s.templateId, s.state])).toEqual([
      ["a", "running"],
      ["b", "paused"],
      ["a", "running"],
      ["a", "paused"],
      ["c", "running"],
      ["b", "paused"],
    ]);
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

  it("sorts a walk into id order, the last record of a repeated id winning, ids shared or not", () => {
    // Each record's cpuCount is its position in the walk, to tell which record a row kept.
    const walk = (ids: string[], previous?: SandboxTable) => {
      const b = SandboxTable.builder(previous);
      ids.forEach((id, i) => {
        b.push(sandbox(1, { id, cpuCount: i }));
      });
      return b.build();
    };
    const rows = (t: SandboxTable) => [...t].map((s) => `${s.id}${s.cpuCount}`);
    const first = walk(["a", "c", "e", "g"]);
    expect(rows(first)).toEqual(["a0", "c1", "e2", "g3"]);
    const second = walk(["b", "c", "d", "g", "h"], first);
    expect(rows(second)).toEqual(["b0", "c1", "d2", "g3", "h4"]);
    // Out of order, a repeat included (E2B pages newest first).
    const third = walk(["h", "c", "g", "d", "c", "a"], second);
    expect(rows(third)).toEqual(["a5", "c4", "d3", "g2", "h0"]);
    expect(rows(walk(["c", "c", "c"], third))).toEqual(["c2"]);
    expect(rows(walk(["z", "y", "x"]))).toEqual(["x2", "y1", "z0"]);
    expect(rows(walk([], second))).toEqual([]);
    const many = Array.from({ length: 5000 }, (_, i) => `id${(i * 7919) % 5000}`);
    const sorted = [...many].sort();
    expect([...walk(many, third)].map((s) => s.id)).toEqual(sorted);
  });

  it("builds the same table with the last one beside it as without, whatever the two walks' orders", () => {
    // Strings shared with the last table (by a merge with its ids, or a step through its walk when
    // the walk is newest first) must never change a row: only which equal string it holds.
    const record = fc.record({
      id: fc.constantFrom(...Array.from({ length: 40 }, (_, i) => `i${(i * 7) % 40}`)),
      started: fc.integer({ min: 0, max: 6 }),
      cpu: fc.integer({ min: 0, max: 3 }),
    });
    const newestFirst = (rs: { id: string; started: number }[]) =>
      [...rs].sort((a, b) => b.started - a.started || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const byId = (rs: { id: string }[]) => [...rs].sort((a, b) => (a.id < b.id ? -1 : 1));
    const orders = [newestFirst, byId, <T>(rs: T[]) => rs];
    fc.assert(
      fc.property(
        fc.array(record, { maxLength: 60 }),
        fc.array(record, { maxLength: 60 }),
        fc.nat(2),
        fc.nat(2),
        (a, b, oa, ob) => {
          const table = (rs: typeof a, previous?: SandboxTable) => {
            const builder = SandboxTable.builder(previous);
            for (const r of rs)
              builder.push(sandbox(1, { id: r.id, startedAt: r.started, cpuCount: r.cpu }));
            return builder.build();
          };
          const first = table((orders[oa] as typeof byId)(a) as typeof a);
          const second = (orders[ob] as typeof byId)(b) as typeof b;
          expect([...table(second, first)].map(fields)).toEqual([...table(second)].map(fields));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("orders rows exactly as a plain sort by id then row would, whatever the ids", () => {
    const plain = (ids: string[]) =>
      ids
        .map((_, i) => i)
        .sort((x, y) => {
          const p = ids[x] as string;
          const q = ids[y] as string;
          return p < q ? -1 : p > q ? 1 : x - y;
        });
    // Shared prefixes, repeats, empty and one-character ids, characters past 126 and astral ones.
    const id = fc.oneof(
      fc.string({ maxLength: 4 }),
      fc.string({ unit: "grapheme", maxLength: 4 }),
      fc.string({ unit: "binary", maxLength: 6 }),
      fc.constantFrom("sbx-", "sbx-0", "sbx-00", "~", "\u007f", "\u00ff", "\uffff"),
      fc.nat(200).map((n) => `sbx-${String(n).padStart(4, "0")}`),
    );
    fc.assert(
      fc.property(fc.array(id, { maxLength: 300 }), (ids) => {
        expect(idOrder(ids)).toEqual(plain(ids));
      }),
      { numRuns: 400 },
    );
  });
});
