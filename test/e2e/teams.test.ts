// Several teams in one exporter (issue #39): each team's walk, templates and events read with its
// own key (or the admin token and X-Team-ID), every team-scoped series labelled with the team, the
// cluster's read once, one team's failure its own, and a body Prometheus's own parser accepts.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { type SimTeamOptions, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { systemClock } from "../../src/util/clock.js";
import { samples, scrape } from "../helpers/exporter.js";
import { promtool, promtoolReady } from "../helpers/promtool.js";

const ADMIN = "admin-token-for-teams";
const A: SimTeamOptions = {
  id: "11111111-1111-4111-8111-111111111111",
  apiKey: "e2b_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  name: "Alpha",
  sandboxes: 7,
};
const B: SimTeamOptions = {
  id: "22222222-2222-4222-8222-222222222222",
  apiKey: "e2b_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
  sandboxes: 3,
};

/** In the simulator, not in the exporter's list until a reload adds it. */
const C: SimTeamOptions = {
  id: "33333333-3333-4333-8333-333333333333",
  apiKey: "e2b_cccccccccccccccccccccccccccccccccccccccc",
  name: "Gamma",
  sandboxes: 4,
};

let sim: Simulator;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ teams: [A, B, C], adminToken: ADMIN, seed: 7 });
  dir = mkdtempSync(join(tmpdir(), "teams-"));
  writeFileSync(join(dir, "a.key"), `${A.apiKey}\n`);
  writeFileSync(join(dir, "b.key"), `${B.apiKey}\n`);
  writeFileSync(join(dir, "c.key"), `${C.apiKey}\n`);
  writeFileSync(join(dir, "admin"), `${ADMIN}\n`);
});

afterAll(async () => {
  await sim?.close();
});

type Config = ReturnType<typeof loadConfig>["config"];

/** The configuration of the config file `file` alone. */
function fromFile(file: string): Config {
  return loadConfig({ argv: ["--config", file], env: {}, readFile: (p) => readFileSync(p, "utf8") })
    .config;
}

/**
 * An exporter watching both teams, with keys (cloud) or the admin token (self-hosted); a reload
 * reads `reloads.next` when a test sets it.
 */
async function exporter(
  mode: "keys" | "admin",
  reloads: { next?: Config } = {},
): Promise<Exporter> {
  const config = fromFile(configFile(mode));
  return startExporter(config, {
    logger: pino({ level: "silent" }),
    clock: systemClock,
    manual: true,
    reloadConfig: () => reloads.next ?? config,
  });
}

/** The config file of both teams, with keys (cloud) or the admin token (self-hosted): its path. */
function configFile(mode: "keys" | "admin"): string {
  const teams =
    mode === "keys"
      ? `    - {id: ${A.id}, name: Alpha, apiKeyFile: ${join(dir, "a.key")}}
    - {id: ${B.id}, apiKeyFile: ${join(dir, "b.key")}, dailyBudget: 5}`
      : `    - {id: ${A.id}, name: Alpha}
    - {id: ${B.id}}`;
  const yaml = `platform:
  flavor: e2b
  apiUrl: ${sim.apiUrl}
  retries: 0
  adminTokenFile: ${join(dir, "admin")}
  teams:
${teams}
server:
  listen: 127.0.0.1:0
poll:
  events: true
cost:
  budget: { daily: 100 }
policy:
  enabled: true
  consecutiveCycles: 1
  maxMatchPercent: 100
  rules:
    # Dry-run: a plan, never an action. The team filter keeps it to team A.
    - { name: old-in-a, action: pause, maxAge: 1s, match: { states: [running], teams: [${A.id}] } }
    - { name: old-anywhere, action: pause, maxAge: 1s, match: { states: [running] } }
`;
  const file = join(dir, `${mode}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

/** The value of `name` for exactly these labels (in the body's order), or undefined. */
function value(body: string, series: string): number | undefined {
  return samples(body).get(series);
}

describe.each(["keys", "admin"] as const)("several teams read with %s", (mode) => {
  let e: Exporter;
  let body: string;

  beforeAll(async () => {
    e = await exporter(mode);
    await e.runCycle();
    body = await scrape(e);
  });

  afterAll(async () => {
    await e?.stop();
  });

  it("labels each team's sandboxes with its team, counting only that team's", () => {
    const count = (team: string) =>
      [...samples(body)]
        .filter(([k]) => k.startsWith("sandbox_sandboxes{") && k.includes(`team="${team}"`))
        .reduce((sum, [, v]) => sum + v, 0);
    expect(count(A.id)).toBe(sim.team(A.id).state.sandboxes.size);
    expect(count(B.id)).toBe(sim.team(B.id).state.sandboxes.size);
    expect(sim.team(A.id).state.sandboxes.size).not.toBe(sim.team(B.id).state.sandboxes.size);
    // No sandbox series without a team: the exporter's own part walks nothing.
    expect(
      [...samples(body).keys()].filter(
        (k) => k.startsWith("sandbox_sandboxes{") && !k.includes("team="),
      ),
    ).toEqual([]);
  });

  it("names the teams once, and reads the cluster once, without a team label", () => {
    expect(value(body, `sandbox_team_info{team="${A.id}",team_name="Alpha"}`)).toBe(1);
    expect(value(body, `sandbox_team_info{team="${B.id}"}`)).toBe(1);
    const up = [...samples(body).keys()].filter((k) =>
      k.startsWith("sandbox_exporter_collect_success{"),
    );
    expect(up).toContain('sandbox_exporter_collect_success{collector="health"}');
    expect(up).toContain(`sandbox_exporter_collect_success{team="${A.id}",collector="sandboxes"}`);
    expect(up).toContain(`sandbox_exporter_collect_success{team="${B.id}",collector="events"}`);
    expect(up.filter((k) => k.includes('collector="health"'))).toHaveLength(1);
    // The process's own series once, without a team.
    const build = [...samples(body).keys()].filter((k) =>
      k.startsWith("sandbox_exporter_build_info"),
    );
    expect(build).toHaveLength(1);
    expect(build[0]).not.toContain("team=");
  });

  it("writes every family once, in a body promtool accepts", async () => {
    const types = body.match(/^# TYPE (\S+) /gm) ?? [];
    expect(new Set(types).size).toBe(types.length);
    expect(await promtoolReady()).toBe(true);
    const r = promtool(body);
    expect(r.output).not.toMatch(/error/i);
    expect(r.status).toBe(0);
  });

  it("shows each team on /status", async () => {
    const status = (await (await fetch(`${e.server.url}/status`)).json()) as {
      teams: Record<
        string,
        { sandboxes: number; name?: string; collectors: Record<string, { state: string }> }
      >;
    };
    expect(status.teams[A.id]?.sandboxes).toBe(sim.team(A.id).state.sandboxes.size);
    expect(status.teams[A.id]?.name).toBe("Alpha");
    expect(status.teams[B.id]?.collectors.sandboxes?.state).toBe("ok");
  });
});

describe("one team listed", () => {
  it("is the single team of before: no team label; a reload to several is refused", async () => {
    const file = join(dir, "one.yaml");
    writeFileSync(
      file,
      `platform:
  flavor: e2b
  apiUrl: ${sim.apiUrl}
  retries: 0
  teams:
    - {id: ${A.id}, apiKeyFile: ${join(dir, "a.key")}, dailyBudget: 7}
server:
  listen: 127.0.0.1:0
`,
    );
    const reloads: { next?: Config } = {};
    const e = await startExporter(fromFile(file), {
      logger: pino({ level: "silent" }),
      clock: systemClock,
      manual: true,
      reloadConfig: () => reloads.next ?? fromFile(file),
    });
    try {
      await e.runCycle();
      const body = await scrape(e);
      expect(body).not.toContain("team=");
      const sandboxes = [...samples(body)]
        .filter(([k]) => k.startsWith("sandbox_sandboxes{"))
        .reduce((sum, [, v]) => sum + v, 0);
      expect(sandboxes).toBe(sim.team(A.id).state.sandboxes.size);
      expect(value(body, 'sandbox_cost_budget{period="daily",currency="USD"}')).toBe(7);
      expect(e.teams).toEqual([]);
      // A reload reads the one team's budget as the start did.
      expect((await e.reload()).ok).toBe(true);
      const again = await scrape(e);
      expect(value(again, 'sandbox_cost_budget{period="daily",currency="USD"}')).toBe(7);
      reloads.next = fromFile(configFile("keys"));
      const refused = await e.reload();
      expect(refused.ok).toBe(false);
      expect(refused.error).toContain("going from one team to several takes a restart");
    } finally {
      await e.stop();
    }
  });
});

describe("teams discovered (platform.discoverTeams)", () => {
  it("watches every team running-counts names, read with the admin token", async () => {
    const file = join(dir, "discover.yaml");
    writeFileSync(
      file,
      `platform:
  flavor: e2b
  apiUrl: ${sim.apiUrl}
  retries: 0
  adminTokenFile: ${join(dir, "admin")}
  discoverTeams: true
  teams:
    - {id: ${A.id}, name: Alpha}
server:
  listen: 127.0.0.1:0
cost:
  enabled: false
`,
    );
    const e = await startExporter(fromFile(file), {
      logger: pino({ level: "silent" }),
      clock: systemClock,
      manual: true,
    });
    try {
      await e.runCycle(); // the cluster's read finds B and C
      await e.runCycle(); // and their first reads
      expect(e.teams.map((t) => t.id).sort()).toEqual([A.id, B.id, C.id]);
      const body = await scrape(e);
      for (const t of [A, B, C]) {
        const n = [...samples(body)]
          .filter(([k]) => k.startsWith("sandbox_sandboxes{") && k.includes(`team="${t.id}"`))
          .reduce((sum, [, v]) => sum + v, 0);
        expect(n).toBe(sim.team(t.id).state.sandboxes.size);
      }
      const status = (await (await fetch(`${e.server.url}/status`)).json()) as {
        teamDiscovery: { discovered: string[] };
      };
      expect(status.teamDiscovery.discovered.sort()).toEqual([B.id, C.id]);
      // A reload keeps the teams discovery found (the list names only A): same pollers after it.
      const before = e.teams.map((t) => t.poller);
      expect((await e.reload()).ok).toBe(true);
      await e.runCycle();
      const after = e.teams.map((t) => t.poller);
      expect(after).toHaveLength(3);
      for (const [i, p] of after.entries()) expect(p).toBe(before[i]);
    } finally {
      await e.stop();
    }
  });
});

describe("E2B's webhook with several teams", () => {
  it("counts each delivered event in its team, and another team's as not its own", async () => {
    const secret = "teams-webhook-secret";
    const registered: Array<{ team: string; hook: { id: string } }> = [];
    const made: Array<{ key: string; id: string }> = [];
    writeFileSync(join(dir, "webhook-secret"), secret);
    const config = fromFile(configFile("keys"));
    const e = await startExporter(
      { ...config, webhooks: { ...config.webhooks, e2bSecretFile: join(dir, "webhook-secret") } },
      { logger: pino({ level: "silent" }), clock: systemClock, manual: true },
    );
    try {
      await e.runCycle();
      // Every team of the simulator delivers to the exporter, C's too (it watches A and B only).
      const hooks = [A, B, C].map((t) => ({
        team: t.id,
        hook: sim.team(t.id).webhooks.register({
          name: "teams test",
          url: `${e.server.url}/webhooks/e2b`,
          enabled: true,
          events: ["sandbox.lifecycle.created"],
          signatureSecret: secret,
        }),
      }));
      registered.push(...hooks);
      /** Created events counted, by team. */
      const created = (text: string) => {
        const out = new Map<string, number>();
        for (const [k, v] of samples(text)) {
          if (!k.startsWith("sandbox_lifecycle_events_total{") || !k.includes('type="created"'))
            continue;
          const team = /team="([^"]+)"/.exec(k)?.[1] ?? "";
          out.set(team, (out.get(team) ?? 0) + v);
        }
        return out;
      };
      const before = created(await scrape(e));
      for (const t of [B, C]) {
        const res = await fetch(`${sim.apiUrl}/sandboxes`, {
          method: "POST",
          headers: { "x-api-key": t.apiKey, "content-type": "application/json" },
          body: JSON.stringify({ templateID: sim.team(t.id).state.templates[0]?.templateID }),
        });
        expect(res.status).toBe(201);
        const { sandboxID } = (await res.json()) as { sandboxID: string };
        made.push({ key: t.apiKey, id: sandboxID });
      }
      // Deliveries run on their own: bounded wait for both to arrive.
      let body = "";
      const delivered = () =>
        (value(body, 'sandbox_webhook_deliveries_total{result="accepted"}') ?? 0) >= 1 &&
        (value(body, 'sandbox_webhook_deliveries_total{result="other_shard"}') ?? 0) >= 1;
      for (let i = 0; i < 100 && !delivered(); i++) {
        await new Promise((r) => setTimeout(r, 50));
        body = await scrape(e);
      }
      expect(delivered()).toBe(true);
      const after = created(body);
      expect((after.get(B.id) ?? 0) - (before.get(B.id) ?? 0)).toBe(1);
      expect((after.get(A.id) ?? 0) - (before.get(A.id) ?? 0)).toBe(0);
      expect(after.has(C.id)).toBe(false);
      expect(value(body, 'sandbox_webhook_deliveries_total{result="duplicate"}')).toBe(0);
    } finally {
      for (const { team, hook } of registered) sim.team(team).webhooks.hooks.delete(hook.id);
      // The fleet as the other cases expect it: the sandboxes made here go.
      for (const { key, id } of made)
        await fetch(`${sim.apiUrl}/sandboxes/${id}`, {
          method: "DELETE",
          headers: { "x-api-key": key },
        });
      await e.stop();
    }
  });
});

describe("the policy per team", () => {
  it("plans in each team on its own, a rule naming a team in that team only", async () => {
    const e = await exporter("keys");
    try {
      await e.runCycle();
      const status = (await (await fetch(`${e.server.url}/status`)).json()) as {
        teams: Record<
          string,
          {
            policy?: {
              plan?: Array<{ rule: string; sandbox: string }>;
              rules?: { name: string }[];
            };
          }
        >;
      };
      const planned = (team: string) =>
        new Set((status.teams[team]?.policy?.plan ?? []).map((d) => `${d.rule} ${d.sandbox}`));
      const running = (team: string) =>
        [...sim.team(team).state.sandboxes.values()].filter((x) => x.state === "running");
      const a = planned(A.id);
      const b = planned(B.id);
      // Every running sandbox planned once, by the first rule that runs in its team: A's by the
      // rule naming A, B's by the one without teams; B does not even hold the rule naming A.
      expect(a).toEqual(new Set(running(A.id).map((x) => `old-in-a ${x.sandboxID}`)));
      expect(b).toEqual(new Set(running(B.id).map((x) => `old-anywhere ${x.sandboxID}`)));
      const rules = (team: string) => status.teams[team]?.policy?.rules?.map((r) => r.name);
      expect(rules(A.id)).toEqual(["old-in-a", "old-anywhere"]);
      expect(rules(B.id)).toEqual(["old-anywhere"]);
      // Nothing acted: every rule is a dry run.
      expect(running(A.id).length).toBeGreaterThan(0);
      const body = await scrape(e);
      const decisions = [...samples(body).keys()].filter(
        (k) => k.startsWith("sandbox_policy_decisions_total{") && k.includes('result="dry_run"'),
      );
      expect(decisions.some((k) => k.includes(`team="${A.id}"`) && k.includes("old-in-a"))).toBe(
        true,
      );
      expect(decisions.some((k) => k.includes(`team="${B.id}"`) && k.includes("old-in-a"))).toBe(
        false,
      );
    } finally {
      await e.stop();
    }
  });
});

describe("each team's budget and the probe's team", () => {
  it("gives a team its own daily budget, the others cost.budget.daily", async () => {
    const e = await exporter("keys");
    try {
      await e.runCycle();
      const body = await scrape(e);
      const budget = (team: string) =>
        [...samples(body)].find(
          ([k]) => k.startsWith("sandbox_cost_budget{") && k.includes(`team="${team}"`),
        )?.[1];
      expect(budget(A.id)).toBe(100);
      expect(budget(B.id)).toBe(5);
    } finally {
      await e.stop();
    }
  });

  it("runs the probe in platform.probeTeam", async () => {
    const config = fromFile(configFile("keys"));
    const e = await startExporter(
      {
        ...config,
        platform: {
          ...config.platform,
          probeTeam: B.id,
          sandboxDomain: sim.domain,
          proxyNodeIp: "127.0.0.1",
          proxyPortHttp: sim.dataPort,
          proxyScheme: "http",
        },
        probe: {
          ...config.probe,
          enabled: true,
          template: sim.team(B.id).state.templates[0]?.templateID ?? "base",
        },
      },
      { logger: pino({ level: "silent" }), clock: systemClock, manual: true },
    );
    try {
      const creates = () => [A, B].map((t) => sim.team(t.id).counters.get("POST /sandboxes"));
      const before = creates();
      expect((await e.prober?.runOnce())?.success).toBe(true);
      const after = creates();
      expect([(after[0] ?? 0) - (before[0] ?? 0), (after[1] ?? 0) - (before[1] ?? 0)]).toEqual([
        0, 1,
      ]);
    } finally {
      await e.stop();
    }
  });
});

describe("one team's failure", () => {
  it("fails that team's readings alone, and never stales another", async () => {
    const e = await exporter("keys");
    try {
      await e.runCycle();
      sim.team(B.id).faults.route("GET /v2/sandboxes", { status: 401 });
      await e.runCycle();
      const body = await scrape(e);
      expect(
        value(body, `sandbox_exporter_collect_success{team="${B.id}",collector="sandboxes"}`),
      ).toBe(0);
      expect(
        value(body, `sandbox_exporter_collect_success{team="${A.id}",collector="sandboxes"}`),
      ).toBe(1);
      expect(
        value(body, `sandbox_exporter_collect_stale{team="${A.id}",collector="sandboxes"}`),
      ).toBe(0);
      expect(
        value(body, `sandbox_exporter_collect_stale{team="${B.id}",collector="sandboxes"}`),
      ).toBe(1);
      const ready = await fetch(`${e.server.url}/readyz`);
      expect(ready.status).toBe(200);
    } finally {
      sim.team(B.id).faults.clear();
      await e.stop();
    }
  });

  it("adds and removes teams on reload, and refuses going to one team", async () => {
    const reloads: { next?: Config } = {};
    const e = await exporter("keys", reloads);
    try {
      await e.runCycle();
      const config = fromFile(configFile("keys"));
      const [a] = config.platform.teams;
      const c = { id: C.id, name: "Gamma", apiKeyFile: join(dir, "c.key") };
      reloads.next = { ...config, platform: { ...config.platform, teams: [a!, c] } };
      expect((await e.reload()).ok).toBe(true);
      await e.runCycle();
      expect(e.teams.map((t) => t.id)).toEqual([A.id, C.id]);
      const body = await scrape(e);
      const count = (team: string) =>
        [...samples(body)]
          .filter(([k]) => k.startsWith("sandbox_sandboxes{") && k.includes(`team="${team}"`))
          .reduce((sum, [, v]) => sum + v, 0);
      expect(count(C.id)).toBe(sim.team(C.id).state.sandboxes.size);
      expect(count(B.id)).toBe(0);
      expect(body).not.toContain(`team="${B.id}"`);
      expect(value(body, `sandbox_team_info{team="${C.id}",team_name="Gamma"}`)).toBe(1);
      // One team is another mode: refused, the two teams kept.
      reloads.next = { ...config, platform: { ...config.platform, teams: [a!] } };
      const refused = await e.reload();
      expect(refused.ok).toBe(false);
      expect(refused.error).toContain("takes a restart");
      expect(e.teams.map((t) => t.id)).toEqual([A.id, C.id]);
    } finally {
      await e.stop();
    }
  });
});
