// What `npm run demo` runs, as functions a test can run too: the demo's simulated fleet and the
// exporter flags that point at it. src/demo.ts only adds the process around them.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { seedDemoSnapshots } from "./demo-snapshots.js";
import { DEFAULT_TEAM_ID } from "./events.js";
import { type ActivityMix, applyActivityMix } from "./generate.js";
import {
  dataPlaneFlags,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "./simulator.js";
import type { SimState } from "./state.js";

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
/** With `--faults`: the share of node-list reads that fail (over SandboxExporterApiErrorRatioHigh's 10 %). */
const FAULT_NODES_ERROR_RATE = 0.2;
/** With `--faults` on E2B: one churn kill in this many is `orphaned` (SandboxesKilledUnexpectedly). */
const FAULT_ORPHANED_ONE_IN = 10;

/**
 * The demo's platform: 300 sandboxes over 5 templates and 4 nodes; as E2B (`e2b`), also a team
 * limit and churn (one sandbox of the fleet killed on request and one created every 2 s). A
 * healthy platform unless `faults`: then 20 % of node-list reads answer 503 and, on E2B, one churn
 * kill in 10 is `orphaned`, so alerts pend.
 */
export function demoSimulatorOptions(e2b: boolean, faults = false): SimulatorOptions {
  return {
    sandboxes: 300,
    templates: 5,
    nodes: 4,
    apiKey: DEMO_KEY,
    ...(e2b && {
      flavor: "e2b",
      adminToken: DEMO_ADMIN_TOKEN,
      teamConcurrencyLimit: DEMO_TEAM_LIMIT,
      churn: { everyMs: 2_000, ...(faults && { orphanedOneIn: FAULT_ORPHANED_ONE_IN }) },
    }),
  };
}

/**
 * Starts the demo's platform (demoSimulatorOptions, shapeDemoFleet). Its active sandboxes, and
 * those the churn creates, log a line every minute, so the idle share the example policy finds
 * stays what the mix made it.
 */
export async function startDemoSimulator(e2b: boolean, faults = false): Promise<Simulator> {
  const sim = await startSimulator(demoSimulatorOptions(e2b, faults));
  const quiet = shapeDemoFleet(sim, e2b, faults);
  const work = setInterval(() => logWork(sim.state, quiet, sim.state.clock.now()), WORK_EVERY_MS);
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
 * Gives a started simulator the demo's fleet: the activity mix above, sandboxes ended at their
 * timeout and snapshot templates of several ages (demo-snapshots.ts) on E2B, and the node list's
 * 503s with `faults`. Returns the quiet running sandboxes (idle or silent-but-busy), the ones
 * logWork leaves alone.
 */
export function shapeDemoFleet(sim: Simulator, e2b: boolean, faults: boolean): Set<string> {
  // Before anything reads a log: the mix moves quiet sandboxes' starts back.
  const kinds = applyActivityMix(
    sim.state.sandboxes.values(),
    new Set(["running"]),
    DEMO_ACTIVITY_MIX,
    sim.state.clock.now(),
  );
  if (e2b) {
    // E2B ends a sandbox at its timeout: killed, or paused when created with auto-pause.
    sim.faults.lifecycle.expireSandboxes = true;
    seedDemoSnapshots(sim.state);
  }
  if (faults) sim.faults.route("GET /nodes", { errorRate: FAULT_NODES_ERROR_RATE, status: 503 });
  return new Set([...kinds].filter(([, kind]) => kind !== "active").map(([id]) => id));
}

/** One line of work, at `now`, in the log of every running sandbox that is not one of `quiet`. */
export function logWork(state: SimState, quiet: ReadonlySet<string>, now: number): void {
  for (const s of state.sandboxes.values())
    if (s.state === "running" && !quiet.has(s.sandboxID))
      s.logs.push({ timestamp: now, line: "work", level: "info" });
}

/** The environment the demo's exporter reads the simulator from. */
export function demoEnv(sim: Simulator): Record<string, string> {
  return { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: DEMO_KEY, SANDBOX_DOMAIN: sim.domain };
}

/**
 * The exporter's flags for the demo against `sim`, writing the files they name into `dir`: E2B's
 * API with `e2b`, polls
 * every 5 s, per-sandbox series and resource usage, the probe modules, the example policy in
 * dry-run, pretty logs; on E2B also events, team capacity, template builds and the webhook secret.
 * Flags given after these win (`--listen`, `--log-format json`).
 */
export function demoExporterArgs(sim: Simulator, e2b: boolean, dir: string): string[] {
  return [
    ...(e2b ? ["--flavor", "e2b"] : []),
    ...["--listen", DEMO_LISTEN, "--poll-schedule", "5s", "--per-sandbox-metrics"],
    // Resource usage after each complete walk, at most once every 15 s: the usage panels fill.
    ...["--poll-usage", "--poll-usage-interval", "15s"],
    ...probeModulesFlags(e2b, dir),
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
    ...(e2b ? [...adminTokenFlags(dir), ...platformTruthFlags(dir)] : []),
  ];
}

/** As an operator registers the exporter with E2B: every lifecycle event, signed. */
export function registerDemoWebhook(sim: Simulator, exporterUrl: string): void {
  sim.webhooks.register({
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
 */
function platformTruthFlags(dir: string): string[] {
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
    "--team-id",
    DEFAULT_TEAM_ID,
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
 * Probe modules, as a config file (modules have no flags): the quick one every 15 s, one that also
 * pauses and resumes its sandbox twice, every 30 s, one that serves a file on a sandbox port
 * through the proxy (`http`), every 30 s; on E2B also one that waits for the platform to pause
 * its sandbox at a 5 s timeout (auto-pause) and one that wakes a paused sandbox by a request to
 * its port (`autoresume`), every minute each. The sandboxapi flavor has neither auto-pause nor
 * auto-resume.
 */
function probeModulesFlags(e2b: boolean, dir: string): string[] {
  const file = join(dir, "probes.yaml");
  const yaml = [
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
    "",
  ].join("\n");
  writeFileSync(file, yaml);
  return ["--config", file];
}
