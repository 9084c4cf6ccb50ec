// `npm run simulator`: run the fake platform standalone (demo, manual testing). Flags only, no env.
import { parseArgs } from "node:util";
import { startSimulator } from "./simulator.js";

const USAGE = `usage: npm run simulator -- [--sandboxes N] [--api-port P] [--data-port P] [--seed S]
  [--templates N] [--nodes N] [--host 127.0.0.1|::1] [--domain D] [--api-key K] [--token-style header|body]
  [--flavor sandboxapi|e2b] [--admin-token T]   (e2b: E2B's hosted API at the root; /nodes needs X-Admin-Token T)
  [--team-id UUID] [--team-concurrency-limit N] [--team-metrics-empty] [--webhook-payload api|snake]
  [--churn-ms MS] [--churn-orphaned-one-in N]   (every MS one sandbox killed, every Nth as orphaned, one created)`;

function int(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sandboxes: { type: "string" },
      "api-port": { type: "string" },
      "data-port": { type: "string" },
      seed: { type: "string" },
      templates: { type: "string" },
      nodes: { type: "string" },
      host: { type: "string" },
      domain: { type: "string" },
      "api-key": { type: "string" },
      "token-style": { type: "string" },
      flavor: { type: "string" },
      "admin-token": { type: "string" },
      "team-id": { type: "string" },
      "team-concurrency-limit": { type: "string" },
      "team-metrics-empty": { type: "boolean" },
      "webhook-payload": { type: "string" },
      "churn-ms": { type: "string" },
      "churn-orphaned-one-in": { type: "string" },
      help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const tokenStyle = values["token-style"];
  if (tokenStyle !== undefined && tokenStyle !== "header" && tokenStyle !== "body") {
    throw new Error("--token-style must be header or body");
  }
  const flavor = values.flavor;
  if (flavor !== undefined && flavor !== "sandboxapi" && flavor !== "e2b") {
    throw new Error("--flavor must be sandboxapi or e2b");
  }
  const payload = values["webhook-payload"];
  if (payload !== undefined && payload !== "api" && payload !== "snake") {
    throw new Error("--webhook-payload must be api or snake");
  }
  const churnMs = int("churn-ms", values["churn-ms"]);
  const orphanedOneIn = int("churn-orphaned-one-in", values["churn-orphaned-one-in"]);
  const sim = await startSimulator({
    sandboxes: int("sandboxes", values.sandboxes),
    apiPort: int("api-port", values["api-port"]),
    dataPort: int("data-port", values["data-port"]),
    seed: int("seed", values.seed),
    templates: int("templates", values.templates),
    nodes: int("nodes", values.nodes),
    host: values.host,
    domain: values.domain,
    apiKey: values["api-key"],
    tokenStyle,
    flavor,
    adminToken: values["admin-token"],
    teamId: values["team-id"],
    teamConcurrencyLimit: int("team-concurrency-limit", values["team-concurrency-limit"]),
    teamMetricsEmpty: values["team-metrics-empty"],
    webhookPayload: payload,
    ...(churnMs !== undefined && {
      churn: { everyMs: churnMs, ...(orphanedOneIn !== undefined && { orphanedOneIn }) },
    }),
  });
  process.stdout.write(
    [
      `management API  ${sim.managementUrl}  (base_url ${sim.apiUrl}${flavor === "e2b" ? ", E2B's API" : ""})`,
      `data plane      ${sim.dataUrl}  (Host: <port>-<sandboxId>.${sim.domain})`,
      `sandboxes       ${sim.state.sandboxes.size}${values["api-key"] ? "  (API key required)" : ""}`,
      "",
    ].join("\n"),
  );
  const stop = () => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `simulator: ${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`,
  );
  process.exit(2);
});
