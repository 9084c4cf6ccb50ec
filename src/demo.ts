// `npm run demo`: the simulator plus the exporter against it, on 127.0.0.1:9464.
// `npm run demo -- --flavor e2b`: the simulator as E2B's hosted API, the exporter in E2B mode.
// The demo's own flags: `--faults` (a platform with faults, so alerts pend) and
// `--prometheus[=HOST:PORT]` (a real Prometheus with the shipped rules, when installed). Every
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
  demoEnv,
  demoExporterArgs,
  registerDemoWebhook,
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
  rest: string[];
} {
  let faults = false;
  let prometheus: string | undefined;
  const rest: string[] = [];
  for (const arg of argv) {
    if (arg === "--faults") faults = true;
    else if (arg === "--prometheus") prometheus = DEMO_PROMETHEUS_LISTEN;
    else if (arg.startsWith("--prometheus=")) prometheus = arg.slice("--prometheus=".length);
    else rest.push(arg);
  }
  return { faults, prometheus, rest };
}

/** The demo's files (config, admin token, Prometheus' data), removed when it exits. */
const demoDir = mkdtempSync(join(tmpdir(), "sandbox-exporter-demo-"));
process.on("exit", () => rmSync(demoDir, { recursive: true, force: true }));

const { faults, prometheus: promListen, rest: args } = demoFlags(process.argv.slice(2));
const e2b = wantsE2b(args);
const sim = await startDemoSimulator(e2b, faults);
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
  process.stdout.write(
    [
      "",
      `simulator:  ${sim.managementUrl}${e2b ? " (E2B's API)" : ""} (data plane on port ${sim.dataPort})`,
      `metrics:    ${url}/metrics`,
      `status:     ${url}/status   (the policy's dry-run plan under "policy")`,
      `index:      ${url}/`,
      ...(prom ? [`prometheus: ${prom.url}/alerts   (the shipped rules; ${prom.url}/rules)`] : []),
      `The exporter listens on ${new URL(url).host} (--listen moves it). ${
        faults ? "Faults on: alerts will pend. " : ""
      }Ctrl-C stops ${prom ? "all three" : "both"}.`,
      "",
    ].join("\n"),
  );
}
