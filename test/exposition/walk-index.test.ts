import { describe, expect, it } from "vitest";
import { WalkIndex, type WalkRecord } from "../../src/exposition/walk-index.js";

type Rec = WalkRecord & { n: number };

/** Runs one walk over `ids`; returns which ids were found, and which records went away. */
function walk(
  index: WalkIndex<Rec>,
  ids: string[],
): { found: string[]; repeated: string[]; gone: string[] } {
  const w = index.begin();
  const found: string[] = [];
  const repeated: string[] = [];
  for (const id of ids) {
    const r = index.find(id);
    if (r?.walk === w) {
      repeated.push(id);
      continue;
    }
    if (r) found.push(id);
    index.keep(r ?? { id, walk: 0, pos: 0, n: 0 });
  }
  const gone: string[] = [];
  index.end((r) => gone.push(r.id));
  return { found, repeated, gone };
}

describe("WalkIndex", () => {
  it("finds the records of the previous walk in any order and reports the ones not seen again", () => {
    const index = new WalkIndex<Rec>();
    expect(walk(index, ["a", "b", "c", "d"])).toEqual({ found: [], repeated: [], gone: [] });
    expect(walk(index, ["a", "c", "x", "d", "b"])).toEqual({
      found: ["a", "c", "d", "b"],
      repeated: [],
      gone: [],
    });
    expect(walk(index, ["d", "b", "y"])).toEqual({
      found: ["d", "b"],
      repeated: [],
      gone: ["a", "c", "x"],
    });
    expect(index.size).toBe(3);
    expect(walk(index, [])).toEqual({ found: [], repeated: [], gone: ["d", "b", "y"] });
  });

  it("tells a repeated id within one walk from a found one", () => {
    const index = new WalkIndex<Rec>();
    walk(index, ["a", "b"]);
    expect(walk(index, ["a", "a", "b", "c", "c"])).toEqual({
      found: ["a", "b"],
      repeated: ["a", "c"],
      gone: [],
    });
  });

  it("keeps the record object, so data attached to it survives between walks", () => {
    const index = new WalkIndex<Rec>();
    index.begin();
    index.keep({ id: "a", walk: 0, pos: 0, n: 41 });
    index.end();
    index.begin();
    const r = index.find("a") as Rec;
    r.n++;
    index.keep(r);
    index.end();
    index.begin();
    expect(index.find("a")?.n).toBe(42);
  });
});
