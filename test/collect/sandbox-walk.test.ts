// SandboxWalk over a list that moves while it is paged: a record listed on two pages is kept once,
// with its latest record, whatever the order the platform pages in, and the walk's order is kept.
import { describe, expect, it } from "vitest";
import type { PlatformReader } from "../../src/collect/collector.js";
import { SandboxWalk, type WalkSettings } from "../../src/collect/sandbox-walk.js";
import type { DeferredPage } from "../../src/platform/normalize/normalize.js";
import type { Sandbox } from "../../src/platform/types.js";

function sandbox(id: string, cpuCount: number): Sandbox {
  return {
    id,
    templateId: "t",
    state: "running",
    cpuCount,
    memoryMB: 512,
    startedAt: 1_795_000_000_000,
    endAt: undefined,
    domain: undefined,
    metadata: {},
    extra: {},
  };
}

/** A reader whose list is `pages` (ids; a record's cpuCount is its position in the walk). */
function reader(pages: string[][]): PlatformReader {
  let at = 0;
  const list = {
    listSandboxPage: async (q: { nextToken?: string }): Promise<DeferredPage<Sandbox>> => {
      const i = q.nextToken === undefined ? 0 : Number(q.nextToken);
      const ids = pages[i] ?? [];
      const items = ids.map((id) => sandbox(id, at++));
      return {
        size: items.length,
        items: () => items,
        ...(i + 1 < pages.length ? { nextToken: String(i + 1) } : {}),
      };
    },
  };
  return list as unknown as PlatformReader;
}

const POLL: WalkSettings = {
  pageLimit: 100,
  maxPages: 100,
  state: undefined,
  metadata: undefined,
  confirmDropRatio: 1,
  maxWalkMs: undefined,
} as unknown as WalkSettings;

async function walk(pages: string[][]): Promise<string[]> {
  const w = new SandboxWalk({
    reader: reader(pages),
    clock: { now: () => 0 },
    poll: POLL,
    intervalMs: 1000,
  });
  const read = await w.read(undefined);
  return [...read.value].map((s) => `${s.id}${s.cpuCount}`);
}

describe("SandboxWalk with whole records (per-sandbox series or the policy on)", () => {
  it("keeps a walk in id order as it came", async () => {
    expect(await walk([["a", "b"], ["c"]])).toEqual(["a0", "b1", "c2"]);
  });

  it("keeps a newest-first walk in its order, and a record listed twice once, with its latest record", async () => {
    expect(
      await walk([
        ["e", "b"],
        ["d", "a"],
      ]),
    ).toEqual(["e0", "b1", "d2", "a3"]);
    // "b" moved while the walk paged (a later page lists it again): its place is where it was
    // first listed, its fields the later record's.
    expect(
      await walk([
        ["e", "b"],
        ["d", "b", "a"],
      ]),
    ).toEqual(["e0", "b3", "d2", "a4"]);
  });

  it("finds a record listed twice in a walk by id that a move put out of order, before or after the move", async () => {
    // "c" first among the ids that ascended, then again after "b" broke the order.
    expect(
      await walk([
        ["a", "c", "e"],
        ["b", "c"],
      ]),
    ).toEqual(["a0", "c4", "e2", "b3"]);
    // Twice after the order broke.
    expect(
      await walk([
        ["a", "b"],
        ["f", "c", "g", "c"],
      ]),
    ).toEqual(["a0", "b1", "f2", "c5", "g4"]);
  });
});
