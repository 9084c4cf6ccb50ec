// Teams found on the platform (platform.discoverTeams): running-counts names the teams with
// running sandboxes; a team found is added once, a listed one never touched, and a discovered one
// removed after idleMs without running sandboxes. A failed read removes nothing.
import { describe, expect, it } from "vitest";
import type { ControlClient } from "../../src/platform/control/control.js";
import { parseRunningCounts, TeamDiscovery } from "../../src/teams/team-discovery.js";

/** A discovery whose platform answers `answers` in turn; adds and removes are recorded. */
function discovery(answers: Array<unknown | Error>, idleMs = 1_000) {
  const watched = new Set<string>(["listed"]);
  const listed = new Set<string>(["listed"]);
  const log: string[] = [];
  const control = {
    getJsonReply: async (
      _e: string,
      _p: string,
      _q: unknown,
      parse: (b: unknown) => unknown,
      opts: { admin?: boolean },
    ) => {
      expect(opts.admin).toBe(true);
      const a = answers.shift();
      if (a instanceof Error) throw a;
      return { body: parse(a), headers: {} };
    },
  } as unknown as ControlClient;
  const d = new TeamDiscovery({
    control,
    add: async (id) => {
      watched.add(id);
      log.push(`+${id}`);
    },
    remove: async (id) => {
      watched.delete(id);
      log.push(`-${id}`);
    },
    watched: () => [...watched],
    listed: () => listed,
    idleMs,
    everyMs: 100,
  });
  return { d, log, watched, listed };
}

describe("TeamDiscovery", () => {
  it("adds a team once, keeps it while busy, removes it after idleMs without running sandboxes", async () => {
    const { d, log, watched } = discovery([
      { listed: 3, a: 2 },
      { a: 1, b: 4 },
      { b: 1 }, // a has none from here on
      new Error("503"),
      { b: 2 },
    ]);
    await d.round(0);
    await d.round(50); // not due: no read
    await d.round(100);
    await d.round(600);
    await d.round(1_100); // fails: removes nothing, though a is idle by now
    expect(log).toEqual(["+a", "+b"]);
    expect(d.status().error?.message).toContain("503");
    await d.round(1_200);
    expect(log).toEqual(["+a", "+b", "-a"]);
    expect([...watched].sort()).toEqual(["b", "listed"]);
    expect(d.status().discovered).toEqual(["b"]);
  });

  it("never removes a listed team, and drops a bad entry without dropping the answer", async () => {
    const { d, log, listed } = discovery(
      [{ listed: 1, good: 1, other: 1, "": 2, bad: "x", neg: -1 }, {}],
      10,
    );
    await d.round(0);
    expect(log).toEqual(["+good", "+other"]);
    expect(d.status().dropped).toBe(3);
    // A reload lists `other`: discovery lets go of it, and never removes it.
    listed.add("other");
    await d.round(1_000);
    expect(log).toEqual(["+good", "+other", "-good"]);
    expect(d.found("other")).toBe(false);
  });

  it("refuses an answer that is not an object of counts", () => {
    expect(() => parseRunningCounts([1, 2])).toThrow("expected an object");
  });
});
