// What `npm run demo` runs, as functions a test can run too: the demo's simulated fleet and the
// exporter flags that point at it. src/demo.ts only adds the process around them.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { seedDemoSnapshots } from "./demo-snapshots.js";
import { SimulatorError } from "./errors.js";
import { DEFAULT_TEAM_ID } from "./events.js";
import { type ActivityMix, applyActivityMix } from "./generate.js";
import {
  dataPlaneFlags,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "./simulator.js";
import type { SimState } from "./state.js";
import { derivedTeams, type SimTeamOptions } from "./teams.js";

export const DEMO_KEY = "demo-key";
const DEMO_ADMIN_TOKEN = "demo-admin-token";
export const DEMO_WEBHOOK_SECRET = "demo-webhook-signing-secret";
/** The E2B demo's team: a limit above the fleet's running count, so the share panel has a value. */
const DEMO_TEAM_LIMIT = 400;
/** Where the demo listens unless `--listen` says otherwise. */
export const DEMO_LISTEN = "127.0.0.1:9464";
const MIN = 60_000;
/** The example policy the demo runs in dry-run. */
export const EXAMPLE_POLICY_FILE = fileURLToPath(
  new URL("../../deploy/policy/example.yaml", import.meta.url),
);

/**
 * What the demo's running sandboxes do, as a fleet does: most log work every minute, a fifth have
 * been quiet for 45 minutes (idle: what the example policy's idle-dev rule is for), and one in ten
 * is quiet but busy on the CPU. Without it every generated sandbox is idle (its log lines follow
 * its start), and the rule, finding all of them idle, would act on none.
 */
export const DEMO_ACTIVITY_MIX: ActivityMix = {
  idle: 0.2,
  silentBusy: 0.1,
  quietForMs: 45 * MIN,
  activeAgoMs: 2 * MIN,
};

/** How often the demo's active sandboxes log a line: well within the idle rule's 30 minutes. */
const WORK_EVERY_MS = MIN;
/** `--teams N` takes two to this many teams: each team's walk is requests of its own every 5 s. */
export const DEMO_MAX_TEAMS = 10;
/** The seed of `--teams N`'s ids and keys: the simulator's default, so every run serves the same. */
const DEMO_TEAMS_SEED = 1;

/** Sandboxes of each team of `--teams N`, as many as the single demo's fleet. */
const DEMO_TEAM_SANDBOXES = 300;

/** With `--faults`: the share of node-list reads that fail (over SandboxExporterApiErrorRatioHigh's 10 %). */
const FAULT_NODES_ERROR_RATE = 0.2;
/** With `--faults` on E2B: one churn kill in this many is `orphaned` (SandboxesKilledUnexpectedly). */
const FAULT_ORPHANED_ONE_IN = 10;

/**
 * The demo's platform: 300 sandboxes over 5 templates and 4 nodes; as E2B (`e2b`), also a team
 * limit and churn (one sandbox of the fleet killed on request and one created every 2 s). A
 * healthy platform unless `faults`: then 20 % of node-list reads answer 503 and, on E2B, one churn
 * kill in 10 is `orphaned`, so alerts pend. With `teams` (two or more, `--teams N`): E2B, that many
 * teams of 300 sandboxes each, each with its own key, limit and churn, on the same 4 nodes.
 */
export function demoSimulatorOptions(e2b: boolean, faults = false, teams = 0): SimulatorOptions {
  const churn = { everyMs: 2_000, ...(faults && { orphanedOneIn: FAULT_ORPHANED_ONE_IN }) };
  const fleet = { sandboxes: 300, templates: 5, nodes: 4 };
  if (teams > 0)
    return {
      ...fleet,
      flavor: "e2b",
      seed: DEMO_TEAMS_SEED,
      adminToken: DEMO_ADMIN_TOKEN,
      teams: demoTeams(teams),
      churn,
    };
  return {
    ...fleet,
    apiKey: DEMO_KEY,
    ...(e2b && {
      flavor: "e2b",
      adminToken: DEMO_ADMIN_TOKEN,
      teamConcurrencyLimit: DEMO_TEAM_LIMIT,
      churn,
    }),
  };
}

/** The teams of `--teams N`: ids and keys from the seed, each named and with the demo's limit. */
function demoTeams(count: number): SimTeamOptions[] {
  if (!Number.isInteger(count) || count < 2 || count > DEMO_MAX_TEAMS)
    throw new SimulatorError(
      `--teams takes 2..${DEMO_MAX_TEAMS} (one team is the E2B demo: npm run demo -- --flavor e2b)`,
    );
  // Each team the single demo's fleet: the example policy's share limit sees as many sandboxes.
  return derivedTeams(count, DEMO_TEAMS_SEED).map((t, i) => ({
    ...t,
    name: `Team ${i + 1}`,
    sandboxes: DEMO_TEAM_SANDBOXES,
    concurrencyLimit: DEMO_TEAM_LIMIT,
  }));
}

/** Whether `sim` serves several teams (`--teams N`): the exporter then watches them all. */
export function servesTeams(sim: Simulator): boolean {
  return sim.teams.length > 1;
}

/**
 * Starts the demo's platform (demoSimulatorOptions, shapeDemoFleet). Its active sandboxes, and
 * those the churn creates, log a line every minute, so the idle share the example policy finds
 * stays what the mix made it.
 */
export async function startDemoSimulator(
  e2b: boolean,
  faults = false,
  teams = 0,
): Promise<Simulator> {
  const sim = await startSimulator(demoSimulatorOptions(e2b, faults, teams));
  const quiet = shapeDemoFleet(sim, e2b || teams > 0, faults);
  const work = setInterval(() => {
    for (const t of sim.teams) logWork(t.state, quiet, t.state.clock.now());
  }, WORK_EVERY_MS);
  work.unref();
  return {
    ...sim,
    close: async () => {
      clearInterval(work);
      await sim.close();
    },
  };
}

/**
 * Gives a started simulator the demo's fleet, in each of its teams: the activity mix above,
 * sandboxes ended at their timeout and snapshot templates of several ages (demo-snapshots.ts) on
 * E2B; and the node list's 503s with `faults` (the cluster's routes are the first team's). Returns
 * the quiet running sandboxes (idle or silent-but-busy), the ones logWork leaves alone.
 */
export function shapeDemoFleet(sim: Simulator, e2b: boolean, faults: boolean): Set<string> {
  const quiet = new Set<string>();
  for (const team of sim.teams) {
    // Before anything reads a log: the mix moves quiet sandboxes' starts back.
    const kinds = applyActivityMix(
      team.state.sandboxes.values(),
      new Set(["running"]),
      DEMO_ACTIVITY_MIX,
      team.state.clock.now(),
    );
    for (const [id, kind] of kinds) if (kind !== "active") quiet.add(id);
    if (e2b) {
      // E2B ends a sandbox at its timeout: killed, or paused when created with auto-pause.
      team.faults.lifecycle.expireSandboxes = true;
      seedDemoSnapshots(team.state);
    }
  }
  if (faults) sim.faults.route("GET /nodes", { errorRate: FAULT_NODES_ERROR_RATE, status: 503 });
  return quiet;
}

/** One line of work, at `now`, in the log of every running sandbox that is not one of `quiet`. */
export function logWork(state: SimState, quiet: ReadonlySet<string>, now: number): void {
  for (const s of state.sandboxes.values())
    if (s.state === "running" && !quiet.has(s.sandboxID))
      s.logs.push({ timestamp: now, line: "work", level: "info" });
}

/**
 * The environment the demo's exporter reads the simulator from; with several teams, each team's
 * key is in the config file instead (demoExporterArgs).
 */
export function demoEnv(sim: Simulator): Record<string, string> {
  return {
    SANDBOX_API_URL: sim.apiUrl,
    ...(servesTeams(sim) ? {} : { SANDBOX_API_KEY: DEMO_KEY }),
    SANDBOX_DOMAIN: sim.domain,
  };
}

/**
 * The exporter's flags for the demo against `sim`, writing the files they name into `dir`: E2B's
 * API with `e2b`, polls
 * every 5 s, per-sandbox series and resource usage, the probe modules, the example policy in
 * dry-run, pretty logs; on E2B also events, team capacity, template builds and the webhook secret.
 * When `sim` serves several teams: E2B, every team in the config file with its key.
 * Flags given after these win (`--listen`, `--log-format json`).
 */
export function demoExporterArgs(sim: Simulator, e2b: boolean, dir: string): string[] {
  const onE2b = e2b || servesTeams(sim);
  return [
    ...(onE2b ? ["--flavor", "e2b"] : []),
    ...["--listen", DEMO_LISTEN, "--poll-schedule", "5s", "--per-sandbox-metrics"],
    // Resource usage after each complete walk, at most once every 15 s: the usage panels fill.
    ...["--poll-usage", "--poll-usage-interval", "15s"],
    ...configFileFlags(sim, onE2b, dir),
    ...dataPlaneFlags(sim.dataPort),
    // The example rules, in dry-run: the plan is on /status, the audit in the log.
    ...["--policy", EXAMPLE_POLICY_FILE],
    // Spend at E2B's published rates (E2B's defaults; given here so the self-hosted flavor meters
    // too), by the fleet's team and owner metadata, against a daily budget: the Spend dashboard fills.
    ...["--cost", "--cost-vcpu-second", "0.000014", "--cost-memory-gib-second", "0.0000045"],
    ...[
      "--cost-attribute-by",
      "team",
      "--cost-attribute-by",
      "owner",
      "--cost-budget-daily",
      "2000",
    ],
    ...["--log-format", "pretty"],
    ...(onE2b ? [...adminTokenFlags(dir), ...platformTruthFlags(sim, dir)] : []),
  ];
}

/**
 * The banner's lines about the teams of `--teams N`, none with one team: each team's id (its
 * series' `team` label) and name, and where the probes run.
 */
export function demoTeamsBanner(sim: Simulator): string[] {
  if (!servesTeams(sim)) return [];
  return sim.teams.map(
    (t, i) =>
      `${`team ${i + 1}:`.padEnd(12)}${t.id}  ${t.name}${i === 0 ? "  (the probes run in this team)" : ""}`,
  );
}

/** As an operator registers the exporter with E2B, in each team: every lifecycle event, signed. */
export function registerDemoWebhook(sim: Simulator, exporterUrl: string): void {
  for (const team of sim.teams)
    team.webhooks.register({
      name: "sandbox-exporter demo",
      url: `${exporterUrl}/webhooks/e2b`,
      enabled: true,
      events: [
        "sandbox.lifecycle.created",
        "sandbox.lifecycle.killed",
        "sandbox.lifecycle.paused",
        "sandbox.lifecycle.resumed",
        "sandbox.lifecycle.updated",
      ],
      signatureSecret: DEMO_WEBHOOK_SECRET,
    });
}

/**
 * What E2B's hosted API serves beyond the sandbox list, all read by the E2B demo: lifecycle events
 * (polled, and pushed to POST /webhooks/e2b, signed with the secret in a file), team capacity
 * against a configured limit, template build states, the team's storage (snapshots, volumes).
 * With several teams, each team's id is in the config file, and the webhook routes each event to
 * its team.
 */
function platformTruthFlags(sim: Simulator, dir: string): string[] {
  const file = join(dir, "e2b-webhook-secret");
  writeFileSync(file, DEMO_WEBHOOK_SECRET, { mode: 0o600 });
  return [
    "--poll-events",
    "--poll-team-metrics",
    "--poll-template-builds",
    "--poll-storage",
    "--team-concurrency-limit",
    String(DEMO_TEAM_LIMIT),
    // The key's team, as an operator sets it: learning it from the events would leave the first
    // tick's team read (before any event arrived) failed, a warning a newcomer cannot act on.
    // Several teams: each id is in platform.teams.
    ...(servesTeams(sim) ? [] : ["--team-id", DEFAULT_TEAM_ID]),
    "--e2b-webhook-secret-file",
    file,
  ];
}

/**
 * The exporter flags that give it the admin token E2B wants on /nodes, from a file as in
 * production (the flag takes no value).
 */
function adminTokenFlags(dir: string): string[] {
  const file = join(dir, "admin-token");
  writeFileSync(file, DEMO_ADMIN_TOKEN, { mode: 0o600 });
  return ["--admin-token-file", file];
}

/**
 * The demo's config file: its probe modules (modules have no flags) and, when `sim` serves several
 * teams, platform.teams: each team's id, name and key file.
 */
function configFileFlags(sim: Simulator, e2b: boolean, dir: string): string[] {
  const teams = servesTeams(sim);
  const file = join(dir, teams ? "demo.yaml" : "probes.yaml");
  writeFileSync(
    file,
    [...probeModulesYaml(e2b), ...(teams ? teamsYaml(sim, dir) : []), ""].join("\n"),
  );
  return ["--config", file];
}

/** platform.teams for every team of `sim`, each key in a file of its own in `dir`. */
function teamsYaml(sim: Simulator, dir: string): string[] {
  return [
    "platform:",
    "  teams:",
    ...sim.teams.map((t, i) => {
      const keyFile = join(dir, `team-${i + 1}.key`);
      writeFileSync(keyFile, t.apiKey ?? "", { mode: 0o600 });
      // JSON strings are YAML's double-quoted scalars: a temp dir's path needs no more care.
      return `    - {id: ${t.id}, name: ${JSON.stringify(t.name)}, apiKeyFile: ${JSON.stringify(keyFile)}}`;
    }),
  ];
}

/**
 * Probe modules: the quick one every 15 s, one that also pauses and resumes its sandbox twice,
 * every 30 s, one that serves a file on a sandbox port through the proxy (`http`), every 30 s; on
 * E2B also one that waits for the platform to pause its sandbox at a 5 s timeout (auto-pause) and
 * one that wakes a paused sandbox by a request to its port (`autoresume`), every minute each. The
 * sandboxapi flavor has neither auto-pause nor auto-resume. With several teams, the probes run in
 * the first team.
 */
function probeModulesYaml(e2b: boolean): string[] {
  return [
    "probe:",
    "  enabled: true",
    "  template: base",
    "  modules:",
    "    - name: quick",
    "      schedule: 15s",
    "    - name: lifecycle",
    "      schedule: 30s",
    "      steps: [exec, file, lifecycle]",
    "      lifecycleRounds: 2",
    ...(e2b
      ? [
          "    - name: autopause",
          "      schedule: 60s",
          "      steps: [file, autopause]",
          "      autoPauseTimeoutMs: 5s",
          "      timeoutMs: 60s",
        ]
      : []),
    "    - name: http",
    "      schedule: 30s",
    "      steps: [http]",
    ...(e2b ? ["    - name: autoresume", "      schedule: 60s", "      steps: [autoresume]"] : []),
  ];
}
