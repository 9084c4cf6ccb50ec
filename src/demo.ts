// `npm run demo`: the simulator plus the exporter against it, on 127.0.0.1:9464.
// `npm run demo -- --flavor e2b`: the simulator as E2B's hosted API, the exporter in E2B mode.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "./cli.js";
import { dataPlaneFlags, startSimulator } from "./simulator/index.js";

const DEMO_KEY = "demo-key";
const DEMO_ADMIN_TOKEN = "demo-admin-token";
const DEMO_WEBHOOK_SECRET = "demo-webhook-signing-secret";
/** The E2B demo's team: a limit above the fleet's running count, so the share panel has a value. */
const DEMO_TEAM_LIMIT = 400;

/** Whether the arguments ask for E2B (`--flavor e2b` or `--flavor=e2b`); they go on to the exporter. */
function wantsE2b(args: readonly string[]): boolean {
  const i = args.lastIndexOf("--flavor");
  return args.includes("--flavor=e2b") || (i >= 0 && args[i + 1] === "e2b");
}

/** The demo's files (config, admin token), removed when it exits. */
const demoDir = mkdtempSync(join(tmpdir(), "sandbox-exporter-demo-"));
process.on("exit", () => rmSync(demoDir, { recursive: true, force: true }));

/**
 * What E2B's hosted API serves beyond the sandbox list, all read by the E2B demo: lifecycle events
 * (polled, and pushed to POST /webhooks/e2b, signed with the secret in a file), team capacity
 * against a configured limit, template build states.
 */
function platformTruthFlags(): string[] {
  const file = join(demoDir, "e2b-webhook-secret");
  writeFileSync(file, DEMO_WEBHOOK_SECRET, { mode: 0o600 });
  return [
    "--poll-events",
    "--poll-team-metrics",
    "--poll-template-builds",
    "--team-concurrency-limit",
    String(DEMO_TEAM_LIMIT),
    "--e2b-webhook-secret-file",
    file,
  ];
}

/**
 * The exporter flags that give it the admin token E2B wants on /nodes, from a file as in
 * production (the flag takes no value).
 */
function adminTokenFlags(): string[] {
  const file = join(demoDir, "admin-token");
  writeFileSync(file, DEMO_ADMIN_TOKEN, { mode: 0o600 });
  return ["--admin-token-file", file];
}

/**
 * Probe modules, as a config file (modules have no flags): the quick one every 15 s, one that also
 * pauses and resumes its sandbox twice, every 30 s, and on E2B one that waits for the platform to
 * pause its sandbox at a 5 s timeout (auto-pause), every minute.
 */
function probeModulesFlags(e2b: boolean): string[] {
  const file = join(demoDir, "probes.yaml");
  const yaml = [
    "probe:",
    "  enabled: true",
    "  template: base",
    "  modules:",
    "    - name: quick",
    "      schedule: 15s",
    "    - name: lifecycle",
    "      schedule: 30s",
    "      phases: [exec, file, lifecycle]",
    "      lifecycleRounds: 2",
    ...(e2b
      ? [
          "    - name: autopause",
          "      schedule: 60s",
          "      phases: [file, autopause]",
          "      autoPauseTimeoutMs: 5s",
          "      timeoutMs: 60s",
        ]
      : []),
    "",
  ].join("\n");
  writeFileSync(file, yaml);
  return ["--config", file];
}

const e2b = wantsE2b(process.argv.slice(2));
const sim = await startSimulator({
  sandboxes: 300,
  templates: 5,
  nodes: 4,
  apiKey: DEMO_KEY,
  ...(e2b && {
    flavor: "e2b",
    adminToken: DEMO_ADMIN_TOKEN,
    teamConcurrencyLimit: DEMO_TEAM_LIMIT,
    // A sandbox killed and one created every 2 s, one kill in 10 recorded as orphaned.
    churn: { everyMs: 2_000, orphanedOneIn: 10 },
  }),
});
// E2B ends a sandbox at its timeout: killed, or paused when created with auto-pause.
if (e2b) sim.faults.lifecycle.expireSandboxes = true;
// Light fault injection: an occasional 503 on the node list, retried by the client.
sim.faults.route("GET /nodes", { errorRate: 0.05, status: 503 });
// The simulator's own settings win over any SANDBOX_* variables of the shell running the demo.
const env = {
  ...process.env,
  SANDBOX_API_URL: sim.apiUrl,
  SANDBOX_API_KEY: DEMO_KEY,
  SANDBOX_DOMAIN: sim.domain,
};
const exporter = await main(
  [
    "--listen",
    "127.0.0.1:9464",
    "--poll-schedule",
    "5s",
    "--per-sandbox-metrics",
    // Synthetic probes through the simulator's data plane: two modules.
    ...probeModulesFlags(e2b),
    ...dataPlaneFlags(sim.dataPort),
    // The example rules, in dry-run: the plan is on /status, the audit in the log.
    "--policy",
    fileURLToPath(new URL("../deploy/policy/example.yaml", import.meta.url)),
    "--log-format",
    "pretty",
    // E2B serves events, team capacity and template build states: the demo reads them all.
    ...(e2b ? [...adminTokenFlags(), ...platformTruthFlags()] : []),
    ...process.argv.slice(2),
  ],
  env,
);
if (exporter && e2b) {
  // As an operator registers the exporter with E2B: every lifecycle event, signed.
  sim.webhooks.register({
    name: "sandbox-exporter demo",
    url: `${exporter.server.url}/webhooks/e2b`,
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
if (exporter) {
  process.stdout.write(
    [
      "",
      `simulator:  ${sim.managementUrl}${e2b ? " (E2B's API)" : ""} (data plane on port ${sim.dataPort})`,
      `metrics:    ${exporter.server.url}/metrics`,
      `status:     ${exporter.server.url}/status`,
      `index:      ${exporter.server.url}/`,
      "Ctrl-C stops both.",
      "",
    ].join("\n"),
  );
  const close = (): void => void sim.close();
  process.on("SIGINT", close);
  process.on("SIGTERM", close);
}
