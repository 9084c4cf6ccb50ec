// E2B's own SDK (2.51) drives the simulator's snapshot templates: createSnapshot with and without
// a name, listSnapshots (all, and one sandbox's), Sandbox.create from a snapshot, and
// deleteSnapshot (which sends DELETE /templates/{id} with the name's / encoded).
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CURRENT_ENVD_VERSION,
  DEFAULT_TEAM_SLUG,
  type Simulator,
} from "../../src/simulator/index.js";
import type { FakeClock } from "../../src/util/clock.js";
import { SDK_API_KEY, sdkOpts, startSdkSimulator, templateOn } from "./sdk-setup.js";

/** Upper bound on list pages walked by a test. */
const MAX_PAGES = 50;

describe("E2B SDK 2.51 against the simulator's snapshot templates", () => {
  let sim: Simulator;
  let clock: FakeClock;

  beforeAll(async () => {
    ({ sim, clock } = await startSdkSimulator());
  });
  afterAll(async () => {
    await sim.close();
  });

  const create = () => Sandbox.create(templateOn(sim, CURRENT_ENVD_VERSION), sdkOpts(sim));

  /** Every snapshot id a paginator returns, walking its pages (bounded). */
  async function walk(paginator: ReturnType<typeof Sandbox.listSnapshots>): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; paginator.hasNext && i < MAX_PAGES; i++)
      ids.push(...(await paginator.nextItems()).map((s) => s.snapshotId));
    expect(paginator.hasNext).toBe(false);
    return ids;
  }

  /** GET /templates/{id} as E2B's API answers it. */
  async function template(id: string) {
    const res = await fetch(`${sim.apiUrl}/templates/${id}`, {
      headers: { "x-api-key": SDK_API_KEY },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it("creates snapshots with and without a name; both lists see them, a sandbox's only its own", async () => {
    const sbx = await create();
    const unnamed = await sbx.createSnapshot();
    expect(unnamed.snapshotId).toMatch(/^[a-z0-9]{20}:default$/);
    expect(unnamed.names).toEqual([]);
    clock.advance(1_000);
    const named = await Sandbox.createSnapshot(sbx.sandboxId, { ...sdkOpts(sim), name: "golden" });
    expect(named).toEqual({
      snapshotId: `${DEFAULT_TEAM_SLUG}/golden:default`,
      names: [`${DEFAULT_TEAM_SLUG}/golden`],
    });
    clock.advance(1_000);
    const other = await create();
    const theirs = await other.createSnapshot();

    const all = await walk(Sandbox.listSnapshots({ ...sdkOpts(sim), limit: 2 }));
    expect(all).toEqual([theirs.snapshotId, named.snapshotId, unnamed.snapshotId]);
    expect(await walk(sbx.listSnapshots())).toEqual([named.snapshotId, unnamed.snapshotId]);
    expect(await walk(other.listSnapshots())).toEqual([theirs.snapshotId]);

    // The same name again: a new build of the same template, under the same snapshotId.
    const again = await other.createSnapshot({ name: "golden" });
    expect(again.snapshotId).toBe(named.snapshotId);
    expect(sim.state.snapshots.resolve("golden")?.builds).toHaveLength(2);
    await Promise.all([sbx.kill(), other.kill()]);
  });

  it("starts a sandbox from a snapshot; deleting it is refused while that sandbox runs, then true, then false", async () => {
    const source = await create();
    const snap = await source.createSnapshot();
    const raw = snap.snapshotId.split(":")[0] as string;
    expect((await template(raw)).body).toMatchObject({ spawnCount: 0, lastSpawnedAt: null });
    clock.advance(60_000);
    const child = await Sandbox.create(snap.snapshotId, sdkOpts(sim));
    expect((await child.getInfo()).templateId).toBe(raw);
    expect((await child.commands.run("echo from-snapshot")).stdout).toBe("from-snapshot\n");
    expect((await template(raw)).body).toMatchObject({
      templateID: raw,
      spawnCount: 1,
      lastSpawnedAt: new Date(clock.now()).toISOString(),
    });
    // E2B's GET /templates/{id} takes the raw id only.
    expect((await template(snap.snapshotId)).status).toBe(404);

    await expect(Sandbox.deleteSnapshot(snap.snapshotId, sdkOpts(sim))).rejects.toThrow(
      /because there are running sandboxes using it/,
    );
    await child.kill();
    expect(await Sandbox.deleteSnapshot(snap.snapshotId, sdkOpts(sim))).toBe(true);
    expect(await Sandbox.deleteSnapshot(snap.snapshotId, sdkOpts(sim))).toBe(false);
    expect(await walk(source.listSnapshots())).toEqual([]);
    await source.kill();
  });

  it("deletes a named snapshot by its snapshotId, the / of its name sent as %2F", async () => {
    const sbx = await create();
    const snap = await sbx.createSnapshot({ name: "to-delete" });
    const before = sim.counters.get("DELETE /templates/{id}");
    expect(await Sandbox.deleteSnapshot(snap.snapshotId, sdkOpts(sim))).toBe(true);
    expect(sim.counters.get("DELETE /templates/{id}")).toBe(before + 1);
    expect(await walk(Sandbox.listSnapshots({ ...sdkOpts(sim), name: "to-delete" }))).toEqual([]);
    expect(await Sandbox.deleteSnapshot(snap.snapshotId, sdkOpts(sim))).toBe(false);
    await sbx.kill();
  });
});
