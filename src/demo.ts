// `npm run demo`: the simulator plus the exporter against it, on 127.0.0.1:9464.
import { fileURLToPath } from "node:url";
import { main } from "./cli.js";
import { dataPlaneFlags, startSimulator } from "./simulator/index.js";

const DEMO_KEY = "demo-key";

const sim = await startSimulator({ sandboxes: 300, templates: 5, nodes: 4, apiKey: DEMO_KEY });
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
    // Synthetic probes through the simulator's data plane, every 15 s.
    "--probe",
    "--probe-schedule",
    "15s",
    "--probe-template",
    "base",
    ...dataPlaneFlags(sim.dataPort),
    // The example rules, in dry-run: the plan is on /status, the audit in the log.
    "--policy",
    fileURLToPath(new URL("../deploy/policy/example.yaml", import.meta.url)),
    "--log-format",
    "pretty",
    ...process.argv.slice(2),
  ],
  env,
);
if (exporter) {
  process.stdout.write(
    [
      "",
      `simulator:  ${sim.apiUrl}/sandboxapi/v1 (data plane on port ${sim.dataPort})`,
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
