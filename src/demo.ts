// `npm run demo`: the simulator plus the exporter against it, on 127.0.0.1:9464.
// `npm run demo -- --flavor e2b`: the simulator as E2B's hosted API, the exporter in E2B mode.
// Every other argument goes on to the exporter, after the demo's own: `--listen 127.0.0.1:9500`
// moves the port, `--log-format json` the log. src/simulator/demo-setup.ts holds what it runs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { main } from "./cli.js";
import {
  DEMO_LISTEN,
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

/** The demo's files (config, admin token), removed when it exits. */
const demoDir = mkdtempSync(join(tmpdir(), "sandbox-exporter-demo-"));
process.on("exit", () => rmSync(demoDir, { recursive: true, force: true }));

const args = process.argv.slice(2);
const e2b = wantsE2b(args);
const sim = await startDemoSimulator(e2b);
// The simulator's own settings win over any SANDBOX_* variables of the shell running the demo.
const env = { ...process.env, ...demoEnv(sim) };
let exporter: Awaited<ReturnType<typeof main>>;
try {
  // On Ctrl-C the exporter stops first (its probes delete their sandboxes, a policy run ends),
  // then the simulator it talks to.
  exporter = await main([...demoExporterArgs(sim, e2b, demoDir), ...args], env, {
    afterStop: () => sim.close(),
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
if (exporter) {
  process.stdout.write(
    [
      "",
      `simulator:  ${sim.managementUrl}${e2b ? " (E2B's API)" : ""} (data plane on port ${sim.dataPort})`,
      `metrics:    ${exporter.server.url}/metrics`,
      `status:     ${exporter.server.url}/status   (the policy's dry-run plan under "policy")`,
      `index:      ${exporter.server.url}/`,
      `The demo listens on ${DEMO_LISTEN} unless --listen says otherwise. Ctrl-C stops both.`,
      "",
    ].join("\n"),
  );
}
