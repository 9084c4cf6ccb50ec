// E2B's own SDK (2.51) as the judge of a simulator serving several teams (issue #39): a sandbox
// created with team A's key is A's alone. B's key does not list it, and connecting to it, reading
// it, killing it or snapshotting it with B's key fails as the SDK reports an unknown sandbox (the
// API's 404), while A keeps running commands in it. Each team's sandboxes answer on the one data
// plane, as E2B's proxy serves every team.
import { Sandbox, SandboxNotFoundError } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type SimTeamOptions,
  type Simulator,
  type SimulatorTeam,
  startSimulator,
} from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

const A: SimTeamOptions = {
  id: "aaaaaaaa-0000-4000-8000-000000000001",
  apiKey: "e2b_a000000000000000000000000000000000000001",
};
const B: SimTeamOptions = {
  id: "bbbbbbbb-0000-4000-8000-000000000002",
  apiKey: "e2b_b000000000000000000000000000000000000002",
};
/** Upper bound on list pages walked by a test. */
const MAX_PAGES = 50;

describe("E2B SDK 2.51 against a simulator serving two teams", () => {
  let sim: Simulator;
  let a: SimulatorTeam;
  let b: SimulatorTeam;

  beforeAll(async () => {
    const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
    sim = await startSimulator({
      flavor: "e2b",
      teams: [A, B],
      adminToken: "admin-sdk",
      sandboxes: 30,
      clock,
    });
    a = sim.team(A.id);
    b = sim.team(B.id);
  });
  afterAll(async () => {
    await sim.close();
  });

  /** The SDK's own options for `team`, as sdk-setup.ts points it at a simulator. */
  function opts(team: SimTeamOptions) {
    return {
      apiKey: team.apiKey,
      apiUrl: sim.apiUrl,
      sandboxUrl: sim.dataUrl,
      requestTimeoutMs: 5_000,
    };
  }

  /** Every sandbox id `Sandbox.list` returns with `team`'s key, walking its pages (bounded). */
  async function listed(team: SimTeamOptions): Promise<Set<string>> {
    const paginator = Sandbox.list({ ...opts(team), limit: 10 });
    const ids = new Set<string>();
    for (let i = 0; paginator.hasNext && i < MAX_PAGES; i++)
      for (const s of await paginator.nextItems()) ids.add(s.sandboxId);
    expect(paginator.hasNext).toBe(false);
    return ids;
  }

  /** Every snapshot id `Sandbox.listSnapshots` returns with `team`'s key (bounded). */
  async function snapshots(team: SimTeamOptions): Promise<string[]> {
    const paginator = Sandbox.listSnapshots(opts(team));
    const ids: string[] = [];
    for (let i = 0; paginator.hasNext && i < MAX_PAGES; i++)
      ids.push(...(await paginator.nextItems()).map((s) => s.snapshotId));
    expect(paginator.hasNext).toBe(false);
    return ids;
  }

  const templateOf = (team: SimulatorTeam): string => team.state.templates[0]!.templateID;

  it("lists a sandbox to the team whose key created it, and not to the other", async () => {
    const sbx = await Sandbox.create(templateOf(a), opts(A));
    try {
      expect(a.state.sandbox(sbx.sandboxId)).toBeDefined();
      expect(b.state.sandbox(sbx.sandboxId)).toBeUndefined();
      const seenA = await listed(A);
      const seenB = await listed(B);
      expect(seenA.has(sbx.sandboxId)).toBe(true);
      expect(seenB.has(sbx.sandboxId)).toBe(false);
      expect(seenB.size).toBeGreaterThan(0);
      expect([...seenA].some((id) => seenB.has(id))).toBe(false);
    } finally {
      await sbx.kill();
    }
  });

  it("reports team A's sandbox unknown to team B's key: connect, info, timeout and kill", async () => {
    const sbx = await Sandbox.create(templateOf(a), opts(A));
    try {
      await expect(Sandbox.connect(sbx.sandboxId, opts(B))).rejects.toBeInstanceOf(
        SandboxNotFoundError,
      );
      await expect(Sandbox.getInfo(sbx.sandboxId, opts(B))).rejects.toBeInstanceOf(
        SandboxNotFoundError,
      );
      await expect(Sandbox.setTimeout(sbx.sandboxId, 60_000, opts(B))).rejects.toBeInstanceOf(
        SandboxNotFoundError,
      );
      expect(await Sandbox.kill(sbx.sandboxId, opts(B))).toBe(false);
      // Still A's, still running: B's kill reached nothing.
      expect((await Sandbox.getInfo(sbx.sandboxId, opts(A))).state).toBe("running");
      expect((await sbx.commands.run("echo still-a")).stdout).toBe("still-a\n");
    } finally {
      expect(await Sandbox.kill(sbx.sandboxId, opts(A))).toBe(true);
    }
  });

  it("runs commands in each team's sandboxes through the one data plane", async () => {
    const mine = await Sandbox.create(templateOf(b), opts(B));
    try {
      expect(b.state.sandbox(mine.sandboxId)).toBeDefined();
      expect((await mine.commands.run("echo from-b")).stdout).toBe("from-b\n");
      await mine.files.write("b.txt", "team b");
      expect(await mine.files.read("b.txt")).toBe("team b");
      expect(b.counters.get("POST /process.Process/Start")).toBeGreaterThan(0);
      expect((await listed(B)).has(mine.sandboxId)).toBe(true);
      expect((await listed(A)).has(mine.sandboxId)).toBe(false);
    } finally {
      await mine.kill();
    }
  });

  it("keeps a team's snapshots from the other team's key", async () => {
    const sbx = await Sandbox.create(templateOf(a), opts(A));
    try {
      const snap = await sbx.createSnapshot();
      expect(await snapshots(A)).toContain(snap.snapshotId);
      expect(await snapshots(B)).not.toContain(snap.snapshotId);
      await expect(Sandbox.createSnapshot(sbx.sandboxId, opts(B))).rejects.toBeInstanceOf(
        SandboxNotFoundError,
      );
      const fromSnapshot = await Sandbox.create(snap.snapshotId, opts(A));
      expect(a.state.sandbox(fromSnapshot.sandboxId)).toBeDefined();
      await fromSnapshot.kill();
      await expect(Sandbox.create(snap.snapshotId, opts(B))).rejects.toThrow(/404/);
      expect([...b.state.sandboxes.values()].some((s) => s.templateID === snap.snapshotId)).toBe(
        false,
      );
    } finally {
      await sbx.kill();
    }
  });
});
