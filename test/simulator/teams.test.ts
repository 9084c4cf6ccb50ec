// A simulator serving several E2B teams (issue #39): each API key reaches its own team's
// sandboxes, templates, snapshots, events, faults and counters; the admin token with X-Team-ID
// reads any team, with the statuses E2B answers (packages/auth middleware.go, api store.go
// GetTeamFromAdminToken); /admin/sandboxes/running-counts counts each team's running sandboxes.
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatorArgs } from "../../src/simulator/args.js";
import { banner } from "../../src/simulator/banner.js";
import {
  DEFAULT_TEAM_ID,
  RUNNING_COUNTS_PATH,
  type SimTeamOptions,
  type Simulator,
  type SimulatorTeam,
  startSimulator,
} from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { output, parseFrames, runCommand } from "./helpers.js";

const ADMIN = "admin-token-123";
const A: SimTeamOptions = {
  id: "11111111-1111-4111-8111-111111111111",
  apiKey: "e2b_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  name: "Alpha",
};
const B: SimTeamOptions = {
  id: "22222222-2222-4222-8222-222222222222",
  apiKey: "e2b_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
};
/** A team with no sandbox at start: what running-counts leaves out. */
const IDLE: SimTeamOptions = {
  id: "33333333-3333-4333-8333-333333333333",
  apiKey: "e2b_cccccccccccccccccccccccccccccccccccccccc",
  sandboxes: 0,
};
/** Upper bound on list pages walked by a test. */
const MAX_PAGES = 20;

type Headers = Record<string, string>;
const key = (team: SimTeamOptions): Headers => ({ "x-api-key": team.apiKey });
const admin = (teamId: string): Headers => ({ "x-admin-token": ADMIN, "x-team-id": teamId });

async function call(
  sim: Simulator,
  path: string,
  headers: Headers,
  method = "GET",
  body?: unknown,
) {
  const res = await request(`${sim.apiUrl}${path}`, {
    method: method as "GET",
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the JSON freely.
  const json: any = text ? JSON.parse(text) : undefined;
  return { status: res.statusCode, headers: res.headers, json };
}

/** Every sandbox id `/v2/sandboxes` lists for these credentials, walking its pages. */
async function listedIds(sim: Simulator, headers: Headers): Promise<Set<string>> {
  const ids = new Set<string>();
  let token: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const q = token === undefined ? "" : `&nextToken=${encodeURIComponent(token)}`;
    const res = await call(sim, `/v2/sandboxes?limit=100${q}`, headers);
    expect(res.status).toBe(200);
    for (const s of res.json as Array<{ sandboxID: string }>) ids.add(s.sandboxID);
    token = res.headers["x-next-token"] as string | undefined;
    if (token === undefined) return ids;
  }
  throw new Error(`/v2/sandboxes did not end within ${MAX_PAGES} pages`);
}

/** The ids a team's own state shows E2B's lists (running and paused). */
function visibleIds(team: SimulatorTeam): Set<string> {
  return new Set(
    [...team.state.sandboxes.values()]
      .filter((s) => s.state === "running" || s.state === "paused")
      .map((s) => s.sandboxID),
  );
}

function runningIn(team: SimulatorTeam): number {
  return [...team.state.sandboxes.values()].filter((s) => s.state === "running").length;
}

describe("a simulator serving several E2B teams", () => {
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00Z"));
  let sim: Simulator;
  let a: SimulatorTeam;
  let b: SimulatorTeam;
  beforeAll(async () => {
    sim = await startSimulator({
      flavor: "e2b",
      teams: [A, B, IDLE],
      adminToken: ADMIN,
      sandboxes: 40,
      nodes: 2,
      clock,
    });
    a = sim.team(A.id);
    b = sim.team(B.id);
  });
  afterAll(() => sim.close());

  it("gives each team its own fleet and templates, split from the total, on shared nodes", () => {
    expect(sim.teams.map((t) => [t.id, t.state.sandboxes.size])).toEqual([
      [A.id, 20],
      [B.id, 20],
      [IDLE.id, 0],
    ]);
    const idsA = [...a.state.sandboxes.keys()];
    expect(idsA.some((id) => b.state.sandboxes.has(id))).toBe(false);
    const templatesA = a.state.templates.map((t) => t.templateID);
    expect(b.state.templates.some((t) => templatesA.includes(t.templateID))).toBe(false);
    expect(b.state.nodes).toBe(a.state.nodes);
    expect(sim.state).toBe(a.state);
  });

  it("lists to each key only its own team's sandboxes and templates, and hides the others'", async () => {
    const seenA = await listedIds(sim, key(A));
    const seenB = await listedIds(sim, key(B));
    expect(seenA).toEqual(visibleIds(a));
    expect(seenB).toEqual(visibleIds(b));
    expect(seenA.size).toBeGreaterThan(0);
    expect([...seenA].some((id) => seenB.has(id))).toBe(false);
    expect(await listedIds(sim, key(IDLE))).toEqual(new Set());

    const tplA = (await call(sim, "/templates", key(A))).json as Array<{ templateID: string }>;
    const tplB = (await call(sim, "/v2/templates?limit=100", key(B))).json as Array<{
      templateID: string;
    }>;
    expect(tplA.map((t) => t.templateID)).toEqual(a.state.templates.map((t) => t.templateID));
    const idsB = new Set(tplB.map((t) => t.templateID));
    expect(idsB).toEqual(new Set(b.state.templates.map((t) => t.templateID)));

    const theirs = [...seenA][0] as string;
    expect((await call(sim, `/sandboxes/${theirs}`, key(A))).status).toBe(200);
    expect((await call(sim, `/sandboxes/${theirs}`, key(B))).status).toBe(404);
    expect((await call(sim, `/templates/${a.state.templates[0]?.templateID}`, key(B))).status).toBe(
      404,
    );
  });

  it("keeps a team's snapshots and lifecycle events to that team", async () => {
    const mine = [...a.state.sandboxes.values()].find((s) => s.state === "running")!.sandboxID;
    expect(
      (await call(sim, `/sandboxes/${mine}/snapshots`, key(B), "POST", { name: "golden" })).status,
    ).toBe(404);
    const snap = await call(sim, `/sandboxes/${mine}/snapshots`, key(A), "POST", {
      name: "golden",
    });
    expect(snap.status).toBe(201);
    expect(snap.json.names).toEqual([`${a.slug}/golden`]);
    const listA = (await call(sim, "/snapshots?limit=100", key(A))).json as Array<{
      snapshotID: string;
    }>;
    expect(listA.map((s) => s.snapshotID)).toEqual([snap.json.snapshotID]);
    expect((await call(sim, "/snapshots?limit=100", key(B))).json).toEqual([]);

    const created = await call(sim, "/v2/sandboxes", key(B), "POST", {
      templateID: b.state.templates[0]?.templateID,
    });
    expect(created.status).toBe(201);
    const newId = created.json.sandboxID as string;
    expect(b.state.sandbox(newId)).toBeDefined();
    expect(a.state.sandbox(newId)).toBeUndefined();
    const eventsB = (await call(sim, "/events/sandboxes?limit=100", key(B))).json as Array<{
      sandboxId: string;
      sandboxTeamId: string;
      type: string;
    }>;
    expect(eventsB).toContainEqual(
      expect.objectContaining({ sandboxId: newId, type: "sandbox.lifecycle.created" }),
    );
    expect(new Set(eventsB.map((e) => e.sandboxTeamId))).toEqual(new Set([B.id]));
    const eventsA = (await call(sim, "/events/sandboxes?limit=100", key(A))).json as Array<{
      sandboxId: string;
      sandboxTeamId: string;
    }>;
    expect(eventsA.some((e) => e.sandboxId === newId)).toBe(false);
    expect(eventsA.every((e) => e.sandboxTeamId === A.id)).toBe(true);
  });

  it("reads a team with the admin token and X-Team-ID, as E2B's AdminTeamAuth does", async () => {
    expect(await listedIds(sim, admin(B.id))).toEqual(visibleIds(b));
    // E2B parses the header with uuid.Parse: case and dashes do not matter.
    expect(await listedIds(sim, admin(B.id.toUpperCase().replaceAll("-", "")))).toEqual(
      visibleIds(b),
    );
    const metrics = await call(sim, `/teams/${B.id}/metrics`, admin(B.id));
    expect(metrics.status).toBe(200);
    const other = await call(sim, `/teams/${A.id}/metrics`, admin(B.id));
    expect(other.status).toBe(403);
  });

  it("answers E2B's statuses for an admin request naming no team, a bad one or a stranger", async () => {
    const none = await call(sim, "/v2/sandboxes", { "x-admin-token": ADMIN });
    expect(none.status).toBe(401);
    const bad = await call(sim, "/v2/sandboxes", admin("not-a-uuid"));
    expect(bad.json).toEqual({
      code: 400,
      message: "Invalid admin token teamID.\nInvalid team ID",
    });
    const stranger = await call(sim, "/snapshots", admin("44444444-4444-4444-8444-444444444444"));
    expect(stranger.json).toEqual({
      code: 404,
      message: "Invalid admin token teamID.\nTeam not found",
    });
    const wrongToken = await call(sim, "/v2/sandboxes", {
      "x-admin-token": "guess",
      "x-team-id": B.id,
    });
    expect(wrongToken.status).toBe(401);
  });

  it("refuses a missing or unknown key with 401; a team's key wins over an X-Team-ID", async () => {
    expect((await call(sim, "/v2/sandboxes", {})).status).toBe(401);
    expect((await call(sim, "/v2/sandboxes", { "x-api-key": "e2b_nobody" })).status).toBe(401);
    expect((await call(sim, "/templates", { "x-team-id": A.id })).status).toBe(401);
    expect(await listedIds(sim, { authorization: `Bearer ${B.apiKey}` })).toEqual(visibleIds(b));
    expect(await listedIds(sim, { ...key(A), "x-team-id": B.id })).toEqual(visibleIds(a));
  });

  it("counts running sandboxes by team for the admin alone, leaving out a team with none", async () => {
    const counts = await call(sim, RUNNING_COUNTS_PATH, { "x-admin-token": ADMIN });
    expect(counts.status).toBe(200);
    expect(counts.json).toEqual({ [A.id]: runningIn(a), [B.id]: runningIn(b) });
    expect((await call(sim, RUNNING_COUNTS_PATH, {})).status).toBe(401);
    expect((await call(sim, RUNNING_COUNTS_PATH, key(A))).status).toBe(401);

    const idle = sim.team(IDLE.id);
    const created = await call(sim, "/v2/sandboxes", key(IDLE), "POST", {
      templateID: idle.state.templates[0]?.templateID,
    });
    expect(created.status).toBe(201);
    const withIdle = await call(sim, RUNNING_COUNTS_PATH, { "x-admin-token": ADMIN });
    expect(withIdle.json[IDLE.id]).toBe(1);
    const gone = await call(sim, `/sandboxes/${created.json.sandboxID}`, key(IDLE), "DELETE");
    expect(gone.status).toBe(204);
    const after = await call(sim, RUNNING_COUNTS_PATH, { "x-admin-token": ADMIN });
    expect(Object.keys(after.json).sort()).toEqual([A.id, B.id]);
  });

  it("injects a fault on one team without touching another, and counts each team's own requests", async () => {
    const route = "GET /v2/sandboxes";
    const before = b.counters.get(route);
    a.faults.route(route, { status: 503 });
    try {
      expect((await call(sim, "/v2/sandboxes", key(A))).status).toBe(503);
      expect((await call(sim, "/v2/sandboxes", key(B))).status).toBe(200);
      expect((await call(sim, "/v2/sandboxes", admin(B.id))).status).toBe(200);
      expect((await call(sim, "/v2/sandboxes", admin(A.id))).status).toBe(503);
    } finally {
      a.faults.clear();
    }
    expect(b.counters.get(route)).toBe(before + 2);
    a.faults.createFails = 500;
    try {
      const templateID = b.state.templates[0]?.templateID;
      expect((await call(sim, "/v2/sandboxes", key(B), "POST", { templateID })).status).toBe(201);
    } finally {
      a.faults.clear();
    }
  });

  it("serves the cluster's nodes to the admin with every team's sandboxes on them", async () => {
    const nodes = await call(sim, "/nodes", { "x-admin-token": ADMIN });
    expect(nodes.status).toBe(200);
    const list = nodes.json as Array<{ id: string; sandboxCount: number }>;
    expect(list.map((n) => n.id)).toEqual(a.state.nodes.map((n) => n.nodeID));
    const running = sim.teams.reduce((n, t) => n + runningIn(t), 0);
    expect(list.reduce((n, x) => n + x.sandboxCount, 0)).toBe(running);
    expect(runningIn(b)).toBeGreaterThan(0);
    expect((await call(sim, "/nodes", key(A))).status).toBe(403);
    expect((await call(sim, "/health", {})).status).toBe(204);
  });

  it("reaches every team's sandboxes on the one data plane, counted by the owning team", async () => {
    const s = [...b.state.sandboxes.values()].find((x) => x.state === "running")!;
    const headers: Headers = s.accessToken ? { "x-access-token": s.accessToken } : {};
    const before = a.counters.get("POST /process.Process/Start");
    const res = await runCommand(sim, s.sandboxID, "echo from-b", headers);
    expect(res.status).toBe(200);
    expect(output(parseFrames(res.body), "stdout")).toBe("from-b\n");
    expect(b.counters.get("POST /process.Process/Start")).toBe(1);
    expect(a.counters.get("POST /process.Process/Start")).toBe(before);
  });
});

describe("the teams option and --teams", () => {
  it("refuses teams outside E2B mode, a per-team option at the top, a bad id or a shared key", async () => {
    await expect(startSimulator({ flavor: "sandboxapi", teams: [A] })).rejects.toThrow(/E2B mode/);
    await expect(startSimulator({ teams: [A], apiKey: "k" })).rejects.toThrow(/apiKey/);
    await expect(startSimulator({ teams: [{ ...A, id: "team-a" }] })).rejects.toThrow(/UUID/);
    await expect(startSimulator({ teams: [A, { ...B, apiKey: A.apiKey }] })).rejects.toThrow(
      /API key of its own/,
    );
  });

  it("answers running counts for the one team of a single-team simulator", async () => {
    const sim = await startSimulator({ flavor: "e2b", sandboxes: 10, adminToken: ADMIN });
    try {
      const res = await call(sim, RUNNING_COUNTS_PATH, { "x-admin-token": ADMIN });
      expect(res.json).toEqual({ [DEFAULT_TEAM_ID]: runningIn(sim.teams[0]!) });
      expect(sim.teams.map((t) => t.id)).toEqual([DEFAULT_TEAM_ID]);
    } finally {
      await sim.close();
    }
  });

  it("derives N teams, their keys and the admin token from the seed, and prints them", async () => {
    const parsed = simulatorArgs(["--teams", "3", "--sandboxes", "10", "--no-expiry"]);
    if (parsed.help) throw new Error("not the usage");
    const { options } = parsed;
    expect(options.flavor).toBe("e2b");
    expect(options.teams).toHaveLength(3);
    for (const t of options.teams ?? []) {
      expect(t.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(t.apiKey).toMatch(/^e2b_[0-9a-f]{40}$/);
    }
    expect(simulatorArgs(["--teams", "3"])).toEqual(simulatorArgs(["--teams", "3"]));
    const other = simulatorArgs(["--teams", "3", "--seed", "2"]);
    expect(other.help === false && other.options.teams?.[0]?.apiKey).not.toBe(
      options.teams?.[0]?.apiKey,
    );
    expect(options.adminToken).toMatch(/^sim-admin-/);
    expect(() => simulatorArgs(["--teams", "2", "--api-key", "k"])).toThrow(/per team/);
    expect(() => simulatorArgs(["--teams", "0"])).toThrow(/1\.\.100/);

    const sim = await startSimulator(options);
    try {
      expect(sim.teams.map((t) => t.state.sandboxes.size)).toEqual([4, 3, 3]);
      const lines = banner(sim, options).split("\n");
      expect(lines).toContain("sandboxes       10 in 3 teams  (each team's API key required)");
      for (const [i, t] of sim.teams.entries())
        expect(lines).toContain(
          `team ${i + 1}          id ${t.id}  key ${t.apiKey}  sandboxes ${t.state.sandboxes.size}  (Team ${i + 1}, snapshots sim-team-${i + 1}/...)`,
        );
      expect(lines.some((l) => l.startsWith(`admin token     ${options.adminToken}`))).toBe(true);
    } finally {
      await sim.close();
    }
  });
});
