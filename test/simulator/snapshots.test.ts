// The simulator's snapshot templates over a real socket, as E2B's handlers serve them (infra
// snapshot_template_create.go, snapshot_template_list.go, template_get.go, template_delete.go):
// taken of a running sandbox, named in the team's namespace, paged newest first, filtered, read by
// raw id only, started from, and deleted by name or id unless a sandbox uses them.
import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEMO_KEY, demoSimulatorOptions, shapeDemoFleet } from "../../src/simulator/demo-setup.js";
import { DEFAULT_TEAM_SLUG, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";

const SLUG = "acme-7f3a";
const T0 = Date.parse("2026-03-01T10:00:00Z");
/** Upper bound on the pages a walk reads. */
const MAX_PAGES = 20;

interface Info {
  snapshotID: string;
  names: string[];
}

interface TemplateWithBuilds {
  templateID: string;
  public: boolean;
  aliases: string[];
  names: string[];
  createdAt: string;
  updatedAt: string;
  lastSpawnedAt: string | null;
  spawnCount: number;
  builds: Array<{ buildID: string; status: string; createdAt: string; cpuCount: number }>;
}

/** A request at the simulator's root; `path` is sent as written (no re-encoding). */
async function call(
  sim: Simulator,
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: unknown,
) {
  const res = await request(`${sim.apiUrl}${path}`, {
    method,
    ...(body !== undefined && {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers,
    json: text === "" ? undefined : (JSON.parse(text) as unknown),
  };
}

describe("the simulator's snapshot templates (E2B mode)", () => {
  let sim: Simulator;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock(T0);
    sim = await startSimulator({ flavor: "e2b", sandboxes: 30, clock, teamSlug: SLUG });
  });
  afterEach(async () => {
    await sim.close();
  });

  /** A new running sandbox of the current envd. */
  const running = (): string => sim.state.addSandbox({ state: "running" }).sandboxID;

  async function snapshot(sandboxId: string, name?: string): Promise<Info> {
    const res = await call(sim, "POST", `/sandboxes/${sandboxId}/snapshots`, name ? { name } : {});
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    return res.json as Info;
  }

  const rawId = (info: Info): string => info.snapshotID.split(":")[0] as string;

  async function template(id: string) {
    const res = await call(sim, "GET", `/templates/${id}`);
    return { status: res.status, body: res.json as TemplateWithBuilds & { message: string } };
  }

  /** Every SnapshotInfo of GET /snapshots?query, walking X-Next-Token; also the page sizes. */
  async function walk(query: string) {
    const items: Info[] = [];
    const pages: number[] = [];
    let token: string | undefined;
    for (let i = 0; i < MAX_PAGES; i++) {
      const q = token === undefined ? query : `${query}&nextToken=${encodeURIComponent(token)}`;
      const res = await call(sim, "GET", `/snapshots?${q}`);
      expect(res.status).toBe(200);
      items.push(...(res.json as Info[]));
      pages.push((res.json as Info[]).length);
      token = res.headers["x-next-token"] as string | undefined;
      if (token === undefined) return { items, pages };
    }
    throw new Error(`GET /snapshots did not end within ${MAX_PAGES} pages`);
  }

  it("lists nothing for the fleet's paused sandboxes: a pause is not a snapshot", async () => {
    expect([...sim.state.sandboxes.values()].some((s) => s.state === "paused")).toBe(true);
    expect((await walk("limit=100")).items).toEqual([]);
  });

  it("takes an unnamed snapshot of a running sandbox under a fresh raw id; 404 for unknown or paused", async () => {
    const id = running();
    const info = await snapshot(id);
    expect(info.snapshotID).toMatch(/^[a-z0-9]{20}:default$/);
    expect(info.names).toEqual([]);
    const other = await snapshot(id);
    expect(rawId(other)).not.toBe(rawId(info));
    // The sandbox keeps running, and E2B's orchestrator records the checkpoint.
    expect(sim.state.sandbox(id)?.state).toBe("running");
    expect(
      sim.events.all().filter((e) => e.type === "sandbox.lifecycle.checkpointed"),
    ).toHaveLength(2);

    const unknown = await call(sim, "POST", "/sandboxes/inope/snapshots", {});
    expect(unknown).toMatchObject({
      status: 404,
      json: { message: `Sandbox "inope" doesn't exist or you don't have access to it` },
    });
    const paused = [...sim.state.sandboxes.values()].find((s) => s.state === "paused");
    const res = await call(sim, "POST", `/sandboxes/${paused?.sandboxID}/snapshots`, {});
    expect(res.status).toBe(404);
    expect((await call(sim, "POST", "/sandboxes/a-b-c/snapshots", {})).status).toBe(400);
  });

  it("refuses a sandbox whose envd is older than 0.5.0, as E2B does", async () => {
    const old = sim.state.addSandbox({ state: "running", envdVersion: "0.4.0" }).sandboxID;
    const res = await call(sim, "POST", `/sandboxes/${old}/snapshots`, {});
    expect(res).toMatchObject({
      status: 400,
      json: {
        message:
          "sandbox envd version must be at least 0.5.0 to create snapshots, current version: 0.4.0",
      },
    });
  });

  it("names a snapshot in the team's namespace; the same name again is a new build of the same template", async () => {
    const first = await snapshot(running(), "golden");
    expect(first).toEqual({ snapshotID: `${SLUG}/golden:default`, names: [`${SLUG}/golden`] });
    const raw = sim.state.snapshots.resolve(`${SLUG}/golden`)?.templateID as string;
    clock.advance(60_000);
    expect(await snapshot(running(), `${SLUG}/golden`)).toEqual(first);
    clock.advance(60_000);
    // A tag goes to the build; the names carry none.
    expect(await snapshot(running(), "golden:v2")).toEqual({
      snapshotID: `${SLUG}/golden:v2`,
      names: [`${SLUG}/golden`],
    });
    const t = await template(raw);
    expect(t.body.builds.map((b) => b.createdAt)).toEqual([
      new Date(T0 + 120_000).toISOString(),
      new Date(T0 + 60_000).toISOString(),
      new Date(T0).toISOString(),
    ]);
    // The template's own times stay those of its first snapshot.
    expect([t.body.createdAt, t.body.updatedAt]).toEqual([
      new Date(T0).toISOString(),
      new Date(T0).toISOString(),
    ]);
    expect([...sim.state.snapshots.all()].map((s) => s.templateID)).toEqual([raw]);

    const foreign = await call(sim, "POST", `/sandboxes/${running()}/snapshots`, {
      name: "other-team/golden",
    });
    expect(foreign).toMatchObject({
      status: 400,
      json: { message: `namespace 'other-team' must match your team '${SLUG}'` },
    });
    const bad = await call(sim, "POST", `/sandboxes/${running()}/snapshots`, { name: "no way" });
    expect(bad).toMatchObject({
      status: 400,
      json: { message: "Invalid name: invalid template ID: no way" },
    });
  });

  it("pages newest first by (createdAt, id), limit 2 at a time, and ends", async () => {
    const made: Array<{ raw: string; at: number }> = [];
    for (let i = 0; i < 7; i++) {
      // Two pairs share a millisecond: the id breaks the tie, descending.
      if (i !== 2 && i !== 5) clock.advance(1_000);
      made.push({ raw: rawId(await snapshot(running())), at: clock.now() });
    }
    const expected = [...made]
      .sort((a, b) => b.at - a.at || (a.raw < b.raw ? 1 : -1))
      .map((m) => `${m.raw}:default`);
    const { items, pages } = await walk("limit=2");
    expect(items.map((x) => x.snapshotID)).toEqual(expected);
    expect(pages).toEqual([2, 2, 2, 1]);
    expect((await walk("")).pages).toEqual([7]);
    expect((await call(sim, "GET", "/snapshots?limit=101")).status).toBe(400);
    expect((await call(sim, "GET", "/snapshots?limit=0")).status).toBe(400);
    expect((await call(sim, "GET", "/snapshots?nextToken=garbage")).status).toBe(400);
  });

  it("filters by source sandbox and by name or id, optionally tag-qualified", async () => {
    const a = running();
    const b = running();
    const a1 = await snapshot(a);
    clock.advance(1_000);
    const a2 = await snapshot(a, "ci-base");
    clock.advance(1_000);
    await snapshot(b);
    await snapshot(b, "nightly:v1");

    const ids = async (query: string) => (await walk(query)).items.map((x) => x.snapshotID);
    expect(await ids(`sandboxID=${a}`)).toEqual([a2.snapshotID, a1.snapshotID]);
    // E2B's ShortID drops a client suffix.
    expect(await ids(`sandboxID=${a}-client1`)).toEqual([a2.snapshotID, a1.snapshotID]);
    expect(await ids(`sandboxID=${running()}`)).toEqual([]);
    expect(await ids("name=ci-base")).toEqual([`${SLUG}/ci-base:default`]);
    expect(await ids(`name=${SLUG}%2Fci-base`)).toEqual([`${SLUG}/ci-base:default`]);
    expect(await ids(`name=${rawId(a1)}`)).toEqual([a1.snapshotID]);
    expect(await ids(`name=${rawId(a1)}:default`)).toEqual([a1.snapshotID]);
    expect(await ids("name=nightly")).toEqual([`${SLUG}/nightly:v1`]);
    expect(await ids("name=nightly:v1")).toEqual([`${SLUG}/nightly:v1`]);
    expect(await ids("name=nightly:default")).toEqual([]);
    expect(await ids("name=unknown")).toEqual([]);
    expect(await ids(`name=ci-base&sandboxID=${b}`)).toEqual([]);
    // An ordinary template is no snapshot.
    expect(await ids("name=base")).toEqual([]);

    expect((await call(sim, "GET", "/snapshots?name=other%2Fci-base")).status).toBe(400);
    expect((await call(sim, "GET", "/snapshots?name=Not%20A%20Name")).status).toBe(400);
    expect((await call(sim, "GET", "/snapshots?sandboxID=a-b-c")).status).toBe(400);
  });

  it("answers GET /templates/{id} for the raw id only: a tag or a name is 404, as E2B looks up e.id", async () => {
    const info = await snapshot(running(), "golden");
    const raw = sim.state.snapshots.resolve(`${SLUG}/golden`)?.templateID as string;
    const t = await template(raw);
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({
      templateID: raw,
      public: false,
      aliases: ["golden"],
      names: [`${SLUG}/golden`],
      createdAt: new Date(T0).toISOString(),
      lastSpawnedAt: null,
      spawnCount: 0,
    });
    expect(t.body.builds).toHaveLength(1);
    expect(t.body.builds[0]?.status).toBe("ready");

    const tagged = await template(`${raw}:default`);
    expect(tagged).toMatchObject({
      status: 404,
      body: { message: `Template ${raw}:default not found` },
    });
    expect((await template(encodeURIComponent(info.snapshotID))).status).toBe(404);
    expect((await template(`${SLUG}%2Fgolden`)).status).toBe(404);
    expect((await template("golden")).status).toBe(404);
    // Ordinary templates answer as before.
    const base = sim.state.template("base");
    expect((await template(base?.templateID ?? "")).body.templateID).toBe(base?.templateID);
  });

  it("starts a sandbox from a snapshot: the raw template id, the source's size, the spawn counted", async () => {
    const source = sim.state.addSandbox({ state: "running", cpuCount: 8, memoryMB: 16_384 });
    const info = await snapshot(source.sandboxID, "golden");
    const raw = sim.state.snapshots.resolve(`${SLUG}/golden`)?.templateID as string;
    clock.advance(3_600_000);
    for (const ref of [info.snapshotID, `${SLUG}/golden`, "golden", `${raw}:default`, raw]) {
      const res = await call(sim, "POST", "/v2/sandboxes", { templateID: ref });
      expect(res.status, ref).toBe(201);
      const created = sim.state.sandbox((res.json as { sandboxID: string }).sandboxID);
      expect(created).toMatchObject({ templateID: raw, alias: "golden", cpuCount: 8 });
      expect(created?.memoryMB).toBe(16_384);
    }
    const t = await template(raw);
    expect(t.body.spawnCount).toBe(5);
    expect(t.body.lastSpawnedAt).toBe(new Date(T0 + 3_600_000).toISOString());

    const noTag = await call(sim, "POST", "/v2/sandboxes", { templateID: "golden:v9" });
    expect(noTag).toMatchObject({
      status: 404,
      json: { message: `tag 'v9' does not exist for template 'golden'` },
    });
    expect((await call(sim, "POST", "/v2/sandboxes", { templateID: "base" })).status).toBe(201);
    expect((await call(sim, "POST", "/v2/sandboxes", { templateID: "nope" })).status).toBe(404);
  });

  it("deletes by raw id, then 404; by name with its / encoded as %2F, which releases the name", async () => {
    const unnamed = await snapshot(running());
    const first = await call(sim, "DELETE", `/templates/${unnamed.snapshotID}`);
    expect(first.status).toBe(204);
    expect((await call(sim, "DELETE", `/templates/${rawId(unnamed)}`)).status).toBe(404);
    expect((await template(rawId(unnamed))).status).toBe(404);

    const named = await snapshot(running(), "golden");
    await snapshot(running(), "golden");
    const path = `/templates/${encodeURIComponent(named.snapshotID)}`;
    expect(path).toContain("%2F");
    expect((await call(sim, "DELETE", path)).status).toBe(204);
    expect((await call(sim, "DELETE", path)).status).toBe(404);
    expect((await walk("name=golden")).items).toEqual([]);
    // The name is free again: a new template takes it.
    const again = await snapshot(running(), "golden");
    expect(again.snapshotID).toBe(`${SLUG}/golden:default`);
    expect([...sim.state.snapshots.all()]).toHaveLength(1);
  });

  it("refuses to delete while a sandbox started from it runs or sits paused (400, E2B's texts)", async () => {
    const info = await snapshot(running());
    const raw = rawId(info);
    const res = await call(sim, "POST", "/v2/sandboxes", { templateID: info.snapshotID });
    const child = (res.json as { sandboxID: string }).sandboxID;

    const whileRunning = await call(sim, "DELETE", `/templates/${raw}`);
    expect(whileRunning).toMatchObject({
      status: 400,
      json: {
        message: `cannot delete template '${raw}' because there are running sandboxes using it`,
      },
    });
    expect((await call(sim, "POST", `/sandboxes/${child}/pause`)).status).toBe(204);
    const whilePaused = await call(sim, "DELETE", `/templates/${info.snapshotID}`);
    expect(whilePaused).toMatchObject({
      status: 400,
      json: {
        message: `cannot delete template '${raw}' because there are paused sandboxes using it`,
      },
    });
    expect((await call(sim, "DELETE", `/sandboxes/${child}`)).status).toBe(204);
    expect((await call(sim, "DELETE", `/templates/${raw}`)).status).toBe(204);
  });
});

describe("the E2B demo's snapshot templates", () => {
  it("seeds unnamed snapshots of several ages and two named ones in use, listed newest first", async () => {
    const clock = new FakeClock(T0);
    const sim = await startSimulator({ ...demoSimulatorOptions(true), clock, churn: undefined });
    try {
      shapeDemoFleet(sim, true, false);
      const res = await request(`${sim.apiUrl}/snapshots`, { headers: { "x-api-key": DEMO_KEY } });
      const listed = (await res.body.json()) as Info[];
      const records = listed.map((x) => {
        const raw = x.snapshotID.split(":")[0] as string;
        return sim.state.snapshots.resolve(raw) ?? sim.state.snapshots.resolve(x.names[0] ?? "");
      });
      const ages = records.map((r) => Math.round((T0 - (r?.createdAt ?? 0)) / 3_600_000));
      expect(ages).toEqual([2, 3 * 24, 3 * 24, 9 * 24, 20 * 24, 30 * 24, 45 * 24]);
      expect(
        listed
          .filter((x) => x.names.length > 0)
          .map((x) => x.snapshotID)
          .sort(),
      ).toEqual([`${DEFAULT_TEAM_SLUG}/ci-base:default`, `${DEFAULT_TEAM_SLUG}/nightly:default`]);
      const nightly = records.find((r) => r?.names[0] === `${DEFAULT_TEAM_SLUG}/nightly`);
      expect(nightly?.builds).toHaveLength(3);
      const unused = records.filter((r) => r?.lastSpawnedAt === undefined).length;
      expect(unused).toBe(3);
      expect(records.filter((r) => r?.lastSpawnedAt === T0 - 3_600_000)).toHaveLength(4);
    } finally {
      await sim.close();
    }
  });
});

describe("DELETE /templates/{id} on an ordinary template", () => {
  it("applies E2B's in-use checks, deletes an unused one, and keeps the last", async () => {
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 0, templates: 2 });
    try {
      const [a, b] = sim.state.templates.map((t) => t.templateID) as [string, string];
      const s = sim.state.addSandbox({ templateID: a, state: "running" });
      const refused = await call(sim, "DELETE", `/templates/${a}`);
      expect(refused).toMatchObject({
        status: 400,
        json: {
          message: `cannot delete template '${a}' because there are running sandboxes using it`,
        },
      });
      sim.state.removeSandbox(s.sandboxID);
      expect((await call(sim, "DELETE", `/templates/${a}:default`)).status).toBe(204);
      expect((await call(sim, "GET", `/templates/${a}`)).status).toBe(404);
      expect(sim.state.templates.map((t) => t.templateID)).toEqual([b]);
      expect((await call(sim, "DELETE", `/templates/${b}`)).status).toBe(400);
    } finally {
      await sim.close();
    }
  });
});
