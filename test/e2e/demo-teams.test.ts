// `npm run demo -- --teams 3` (issue #39): the simulator as E2B with three teams and one exporter
// watching them all. In process, the demo's own fleet and flags (src/simulator/demo-setup.ts) with
// the churn left out, so each team's count holds still between the walk and the check: every team's
// sandboxes counted under its own `team` label, sandbox_team_info and /status naming the three,
// every team-scoped read succeeding, the probes in the first team, every landing-page link 200,
// nothing warning. As a process: the banner names each team and what is left out, Ctrl-C exits 0
// without a warning, and a team count the demo cannot run is refused before anything starts.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import type { loadConfig } from "../../src/catalog.js";
import {
  demoSimulatorOptions,
  demoTeamsBanner,
  shapeDemoFleet,
} from "../../src/simulator/demo-setup.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { output, waitForOutput } from "../helpers/child.js";
import { startDemoExporter } from "../helpers/demo-exporter.js";
import { samples } from "../helpers/exporter.js";

const TEAMS = 3;
const CYCLES = 2;

/** The sum of every sample of `family` whose labels include `team="<id>"`. */
function teamSum(body: string, family: string, id: string): number {
  return [...samples(body)]
    .filter(([k]) => k.startsWith(`${family}{`) && k.includes(`team="${id}"`))
    .reduce((n, [, v]) => n + v, 0);
}

/**
 * The sandboxes of `team` that sandbox_sandboxes counts: running or paused (the fleet's starting
 * and killing ones are in neither of the exporter's states.running and states.paused).
 */
function counted(team: Simulator["teams"][number]): number {
  return [...team.state.sandboxes.values()].filter(
    (s) => s.state === "running" || s.state === "paused",
  ).length;
}

describe("the demo with --teams 3, in process", () => {
  let sim: Simulator;
  let exporter: Exporter;
  let config: ReturnType<typeof loadConfig>["config"];
  let body: string;
  const dir = mkdtempSync(join(tmpdir(), "demo-teams-"));
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    // The demo's platform as startDemoSimulator makes it, but for the churn's timer.
    const { churn: _churn, ...options } = demoSimulatorOptions(true, false, TEAMS);
    sim = await startSimulator(options);
    shapeDemoFleet(sim, true, false);
    ({ exporter, config } = await startDemoExporter(sim, true, dir, lines));
    for (let i = 0; i < CYCLES; i++) await exporter.runCycle();
    body = await (await fetch(`${exporter.server.url}/metrics`)).text();
  }, 60_000);

  afterAll(async () => {
    await exporter?.stop();
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves three teams, each with a share of the fleet", () => {
    expect(sim.teams).toHaveLength(TEAMS);
    for (const t of sim.teams) expect(counted(t)).toBeGreaterThan(0);
    // Each its own fleet: no sandbox id in two teams.
    const ids = sim.teams.flatMap((t) => [...t.state.sandboxes.keys()]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(config.platform.teams.map((t) => t.id)).toEqual(sim.teams.map((t) => t.id));
  });

  it("counts each team's sandboxes under its own team label, and none without one", () => {
    for (const t of sim.teams)
      expect(teamSum(body, "sandbox_sandboxes", t.id), t.id).toBe(counted(t));
    const unlabelled = [...samples(body).keys()].filter(
      (k) => k.startsWith("sandbox_sandboxes{") && !k.includes("team="),
    );
    expect(unlabelled).toEqual([]);
  });

  it("names the three teams in sandbox_team_info", () => {
    const info = [...samples(body)].filter(([k]) => k.startsWith("sandbox_team_info{"));
    expect(info.map(([k]) => k).sort()).toEqual(
      sim.teams.map((t) => `sandbox_team_info{team="${t.id}",team_name="${t.name}"}`).sort(),
    );
    expect(info.every(([, v]) => v === 1)).toBe(true);
  });

  it("shows the three teams on /status, each with its sandboxes", async () => {
    const status = (await (await fetch(`${exporter.server.url}/status`)).json()) as {
      teams: Record<string, { name?: string; sandboxes: number }>;
    };
    expect(Object.keys(status.teams).sort()).toEqual(sim.teams.map((t) => t.id).sort());
    for (const t of sim.teams) {
      expect(status.teams[t.id]?.name).toBe(t.name);
      expect(status.teams[t.id]?.sandboxes).toBe(counted(t));
    }
  });

  it("reads every team's collectors and meters every team's spend", () => {
    const reads = [...samples(body)].filter(
      ([k]) => k.startsWith("sandbox_exporter_collect_success{") && k.includes("team="),
    );
    for (const t of sim.teams) {
      const own = reads.filter(([k]) => k.includes(`team="${t.id}"`));
      const collectors = own.map(([k]) => /collector="([^"]+)"/.exec(k)?.[1]);
      expect(collectors).toEqual(expect.arrayContaining(["sandboxes", "events", "storage"]));
      expect(Object.fromEntries(own), t.id).toEqual(Object.fromEntries(own.map(([k]) => [k, 1])));
      expect(teamSum(body, "sandbox_estimated_cost_total", t.id), t.id).toBeGreaterThan(0);
    }
  });

  it("fails no collector of the exporter's own part", async () => {
    const status = (await (await fetch(`${exporter.server.url}/status`)).json()) as {
      collectors: Record<string, { state: string }>;
    };
    expect(Object.entries(status.collectors).filter(([, c]) => c.state === "failed")).toEqual([]);
    const failed = [...samples(body)].filter(
      ([k, v]) => k.startsWith("sandbox_exporter_collect_success{") && v === 0,
    );
    expect(failed).toEqual([]);
  });

  it("logs no warning in its first cycles", () => {
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
  });

  it("runs the policy per team and E2B's webhook, and its banner names the teams", async () => {
    expect(config.policy.enabled).toBe(true);
    expect(config.webhooks.e2bSecretFile).toBeDefined();
    const status = (await (await fetch(`${exporter.server.url}/status`)).json()) as {
      teams: Record<string, { policy?: { rules?: unknown[] } }>;
    };
    for (const t of sim.teams)
      expect(status.teams[t.id]?.policy?.rules?.length, t.id).toBeGreaterThan(0);
    const banner = demoTeamsBanner(sim);
    expect(banner).toHaveLength(TEAMS);
    sim.teams.forEach((t, i) => {
      expect(banner[i]).toContain(t.id);
      expect(banner[i]).toContain(t.name);
    });
    expect(banner[0]).toContain("(the probes run in this team)");
    expect(banner[1]).not.toContain("probes");
  });

  it("answers 200 at every link of the landing page, probing in the first team", async () => {
    const page = await (await fetch(`${exporter.server.url}/`)).text();
    const links = [...page.matchAll(/href="([^"]+)"/g)].map((m) =>
      (m[1] ?? "").replaceAll("&amp;", "&"),
    );
    expect(links).toEqual(["/metrics", "/status", "/healthz", "/readyz", "/probe?module=quick"]);
    const answers: Record<string, number> = {};
    for (const link of links) answers[link] = (await fetch(`${exporter.server.url}${link}`)).status;
    expect(answers).toEqual(Object.fromEntries(links.map((l) => [l, 200])));
    const creates = sim.teams.map((t) => t.counters.get("POST /sandboxes"));
    expect(creates).toEqual([1, 0, 0]);
  });
});

describe("the teams demo as a process", () => {
  /** node --import tsx, not the tsx binary: the signal must reach the demo process itself. */
  const demo = (...args: string[]) =>
    spawn(process.execPath, ["--import", "tsx", "src/demo.ts", ...args], { env: process.env });

  it("names each team, fills the probes, and stops on Ctrl-C without a warning", async () => {
    const child = demo("--teams", "3", "--listen", "127.0.0.1:0", "--log-format", "json");
    const out = output(child);
    try {
      const printed = await waitForOutput(out, (t) => /Ctrl-C stops/.test(t), 600);
      expect(printed).toMatch(/simulator:\s+http\S+ \(E2B's API, 3 teams, each with its own/);
      const teamLines = printed.match(/^team \d:\s+[0-9a-f-]{36}\s+Team \d\b/gm);
      expect(teamLines, printed).toHaveLength(TEAMS);
      expect(printed).not.toMatch(/not yet with several teams/);
      expect(printed).toMatch(/status:\s+\S+\/status\s+\(each team under "teams", its policy/);
      const url = /metrics:\s+(http:\S+)\/metrics/.exec(printed)?.[1];
      expect(url, printed).toBeDefined();
      // Bounded: the quick module runs once at start, in the first team.
      const probed = (t: string) => /^sandbox_probe_success\{module="quick",[^}]*\} 1$/m.test(t);
      let text = "";
      for (let i = 0; i < 80 && !probed(text); i++) {
        text = await (await fetch(`${url}/metrics`)).text();
        if (!probed(text)) await new Promise((r) => setTimeout(r, 250));
      }
      expect(probed(text), text).toBe(true);
      child.kill("SIGINT");
      const [code] = await once(child, "exit");
      expect(code, out()).toBe(0);
      const logged = out()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { level: number; msg: string; teams?: number });
      expect(logged.find((l) => l.msg === "sandbox-exporter listening")?.teams).toBe(TEAMS);
      expect(logged.filter((l) => l.level >= 40)).toEqual([]);
    } finally {
      child.kill("SIGKILL");
    }
  }, 60_000);

  it.each([
    [["--teams", "1"], "--teams takes 2 to 10 teams"],
    [["--teams=many"], "--teams takes 2 to 10 teams"],
    [["--teams", "3", "--flavor", "sandboxapi"], "--teams runs E2B's API"],
  ])(
    "refuses %j before starting anything, exit 2",
    async (args, message) => {
      const child = demo(...args, "--listen", "127.0.0.1:0");
      const out = output(child);
      try {
        const [code] = await once(child, "exit");
        expect(code, out()).toBe(2);
        expect(out()).toContain(`demo: ${message}`);
        expect(out()).not.toContain("simulator:");
      } finally {
        child.kill("SIGKILL");
      }
    },
    30_000,
  );
});
