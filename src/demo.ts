// `npm run demo`: the simulator plus the exporter against it, on 127.0.0.1:9464.
// `npm run demo -- --flavor e2b`: the simulator as E2B's hosted API, the exporter in E2B mode.
// `npm run demo -- --teams N`: the simulator as E2B with N teams, the exporter watching them all.
// The demo's own flags: `--faults` (a platform with faults, so alerts pend),
// `--prometheus[=HOST:PORT]` (a real Prometheus with the shipped rules, when installed) and
// `--teams N` (or `--teams=N`: 2 to 10 teams, each with its own key, one exporter for all). Every
// other argument goes on to the exporter, after the demo's own: `--listen 127.0.0.1:9500` moves
// the port, `--log-format json` the log. src/simulator/demo-setup.ts holds what it runs.
// package.json runs it as `exec node --import tsx`: without `exec`, Ctrl-C's SIGINT kills npm's
// shell (dash) itself, and through the tsx binary its parent process may SIGKILL the demo and exit
// 130; as one process under npm, the demo's clean stop is exit 0.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main } from "./cli.js";
import {
  DEMO_PROMETHEUS_LISTEN,
  type DemoPrometheus,
  startDemoPrometheus,
} from "./simulator/demo-prometheus.js";
import {
  DEMO_MAX_TEAMS,
  demoEnv,
  demoExporterArgs,
  demoTeamsBanner,
  registerDemoWebhook,
  servesTeams,
  startDemoSimulator,
} from "./simulator/demo-setup.js";

/** Whether the arguments ask for E2B (`--flavor e2b` or `--flavor=e2b`); they go on to the exporter. */
function wantsE2b(args: readonly string[]): boolean {
  const i = args.lastIndexOf("--flavor");
  return args.includes("--flavor=e2b") || (i >= 0 && args[i + 1] === "e2b");
}

/** The demo's own flags, taken out of the arguments; the rest goes on to the exporter. */
function demoFlags(argv: readonly string[]): {
  faults: boolean;
  prometheus: string | undefined;
  /** `--teams N`; 0 without it. */
  teams: number;
  rest: string[];
} {
  let faults = false;
  let prometheus: string | undefined;
  let teams = 0;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--faults") faults = true;
    else if (arg === "--prometheus") prometheus = DEMO_PROMETHEUS_LISTEN;
    else if (arg.startsWith("--prometheus=")) prometheus = arg.slice("--prometheus=".length);
    else if (arg === "--teams") teams = teamCount(argv[++i]);
    else if (arg.startsWith("--teams=")) teams = teamCount(arg.slice("--teams=".length));
    else rest.push(arg);
  }
  return { faults, prometheus, teams, rest };
}

/** The number `--teams` is given; one out of 2..DEMO_MAX_TEAMS ends the demo, saying so. */
function teamCount(raw: string | undefined): number {
  const n = Number(raw);
  if (raw !== undefined && /^\d+$/.test(raw) && n >= 2 && n <= DEMO_MAX_TEAMS) return n;
  return refuse(
    `--teams takes 2 to ${DEMO_MAX_TEAMS} teams, e.g. npm run demo -- --teams 3 (one team: npm run demo -- --flavor e2b)`,
  );
}

/** Ends the demo before it starts anything, with `message` and exit code 2 (a usage error). */
function refuse(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(2);
}

/** The demo's files (config, admin token, Prometheus' data), removed when it exits. */
const demoDir = mkdtempSync(join(tmpdir(), "sandbox-exporter-demo-"));
process.on("exit", () => rmSync(demoDir, { recursive: true, force: true }));

const { faults, prometheus: promListen, teams, rest: args } = demoFlags(process.argv.slice(2));
// Teams are E2B's: --teams needs no --flavor, and refuses another.
if (teams > 0 && args.some((a) => a.startsWith("--flavor")) && !wantsE2b(args))
  refuse("--teams runs E2B's API: leave out --flavor, or give --flavor e2b");
const e2b = wantsE2b(args) || teams > 0;
const sim = await startDemoSimulator(e2b, faults, teams);
// The simulator's own settings win over any SANDBOX_* variables of the shell running the demo.
const env = { ...process.env, ...demoEnv(sim) };
let prom: DemoPrometheus | undefined;
let exporter: Awaited<ReturnType<typeof main>>;
try {
  // On Ctrl-C the exporter stops first (its probes delete their sandboxes, a policy run ends),
  // then Prometheus and the simulator it talks to.
  exporter = await main([...demoExporterArgs(sim, e2b, demoDir), ...args], env, {
    afterStop: async () => {
      await prom?.stop();
      await sim.close();
    },
  });
} catch (err) {
  await sim.close();
  if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
    process.stderr.write(
      `demo: the port is in use (${(err as Error).message}); pick another with --listen, e.g. npm run demo -- --listen 127.0.0.1:9465\n`,
    );
    process.exit(1);
  }
  throw err;
}
// --help and --version start nothing: the simulator must not keep the process alive.
if (!exporter) await sim.close();
if (exporter && e2b) registerDemoWebhook(sim, exporter.server.url);
if (exporter && promListen !== undefined) {
  try {
    prom = await startDemoPrometheus(new URL(exporter.server.url).host, promListen, demoDir);
  } catch (err) {
    process.stderr.write(`demo: --prometheus: ${(err as Error).message}; going on without it\n`);
  }
}
if (exporter) {
  const url = exporter.server.url;
  const several = servesTeams(sim);
  const api = several
    ? ` (E2B's API, ${sim.teams.length} teams, each with its own API key)`
    : e2b
      ? " (E2B's API)"
      : "";
  const sections = several
    ? ['each team under "teams", its policy\'s dry-run plan under "teams.<id>.policy"']
    : [`the policy's dry-run plan under "policy"`];
  process.stdout.write(
    [
      "",
      `simulator:  ${sim.managementUrl}${api} (data plane on port ${sim.dataPort})`,
      ...demoTeamsBanner(sim),
      `metrics:    ${url}/metrics${several ? '   (every team\'s series carry team="<id>")' : ""}`,
      `status:     ${url}/status   (${sections.join("; ")})`,
      `index:      ${url}/`,
      ...(prom ? [`prometheus: ${prom.url}/alerts   (the shipped rules; ${prom.url}/rules)`] : []),
      `The exporter listens on ${new URL(url).host} (--listen moves it). ${
        faults ? "Faults on: alerts will pend. " : ""
      }Ctrl-C stops ${prom ? "all three" : "both"}.`,
      "",
    ].join("\n"),
  );
}
