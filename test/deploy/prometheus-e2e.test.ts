// End to end: simulator -> exporter -> a real Prometheus evaluating the shipped alert rules
// (with every `for:` shortened). Faults injected in the simulator must fire the matching alerts,
// and clearing them must resolve the alerts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { Exporter } from "../../src/app.js";
import { ConfigSchema } from "../../src/catalog.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startQuiet } from "../helpers/exporter.js";
import {
  copyRulesWithShortFor,
  type RunningPrometheus,
  startPrometheus,
} from "../helpers/prometheus.js";

const RULES_DIR = join(import.meta.dirname, "..", "..", "deploy", "prometheus", "rules");
const JOB = "sandbox-exporter";
/** Above the bounded waits in sequence (readiness 20 s, five waits of WAIT_MS), so they report first. */
const TEST_TIMEOUT_MS = 160_000;
/** Longest wait for one set of alerts to fire or resolve. */
const WAIT_MS = 25_000;
const POLL_EVERY_MS = 250;

interface Alert {
  labels: Record<string, string>;
  state: "pending" | "firing" | "inactive";
}

let sim: Simulator | undefined;
let exporter: Exporter | undefined;
let prom: RunningPrometheus | undefined;
const scratch = mkdtempSync(join(tmpdir(), "prometheus-e2e-rules-"));

/** Starts simulator, exporter and Prometheus; in the test itself, so a missing binary fails it. */
async function setUp(): Promise<void> {
  sim = await startSimulator({ sandboxes: 20, nodes: 3, templates: 3 });
  // Failing from the first cycle on, so the overview collector never succeeds (DataStale's
  // "never succeeded" branch; its data-age branch needs 5 minutes).
  sim.faults.route("GET /cluster/overview", { status: 503 });
  const config = ConfigSchema.parse({
    platform: {
      apiUrl: sim.apiUrl,
      sandboxDomain: sim.domain,
      retries: 0,
      timeoutMs: 5_000,
      proxyNodeIp: "127.0.0.1",
      proxyPortHttp: sim.dataPort,
      proxyScheme: "http",
    },
    server: { listen: "127.0.0.1:0" },
    poll: { schedule: "1s" },
    probe: {
      enabled: true,
      schedule: "1s",
      template: sim.state.templates[0]!.templateID,
      timeoutMs: 10_000,
      phaseTimeoutMs: 5_000,
    },
    log: { level: "silent" },
  });
  exporter = await startQuiet(config, true);
  prom = await startPrometheus({
    job: JOB,
    targets: [new URL(exporter.server.url).host],
    ruleFiles: copyRulesWithShortFor(RULES_DIR, scratch, "1s"),
    interval: "1s",
  });
}

afterAll(async () => {
  await prom?.stop();
  await exporter?.stop();
  await sim?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function alerts(): Promise<Alert[]> {
  return (await prom!.api<{ alerts: Alert[] }>("/api/v1/alerts")).alerts;
}

const matches = (a: Alert, want: Record<string, string>): boolean =>
  Object.entries(want).every(([k, v]) => a.labels[k] === v);

/** Polls Prometheus (an external process, so short sleeps) until `done` holds or the deadline passes. */
async function until(what: string, done: (a: Alert[]) => boolean): Promise<Alert[]> {
  const deadline = Date.now() + WAIT_MS;
  let last: Alert[] = [];
  for (let i = 0; i < WAIT_MS / POLL_EVERY_MS && Date.now() < deadline; i++) {
    last = await alerts();
    if (done(last)) return last;
    await sleep(POLL_EVERY_MS);
  }
  throw new Error(`timed out waiting until ${what}; alerts: ${JSON.stringify(last, null, 1)}`);
}

async function untilQuery(query: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (let i = 0; i < WAIT_MS / POLL_EVERY_MS && Date.now() < deadline; i++) {
    const r = await prom!.api<{ result: unknown[] }>(
      `/api/v1/query?query=${encodeURIComponent(query)}`,
    );
    if (r.result.length > 0) return;
    await sleep(POLL_EVERY_MS);
  }
  throw new Error(`timed out waiting for ${query} to return data`);
}

describe("the shipped alert rules on a real Prometheus", () => {
  it(
    "fire on a node, probe, health and template failure and resolve once they are cleared",
    async () => {
      onTestFailed(() => {
        console.error(`--- prometheus output ---\n${prom?.output() ?? "(not started)"}`);
      });
      await setUp();
      const s = sim!;
      const node = s.state.nodes[0]!.nodeID;
      const template = s.state.templates[1]!.templateID;
      const base = { job: JOB };
      const wanted: Record<string, string>[] = [
        { ...base, alertname: "SandboxNodeNotReady", node, severity: "warning" },
        { ...base, alertname: "SandboxProbeFailing", severity: "critical" },
        { ...base, alertname: "SandboxPlatformDown", severity: "critical" },
        { ...base, alertname: "SandboxTemplateError", template, severity: "warning" },
      ];
      const stale = {
        ...base,
        alertname: "SandboxExporterDataStale",
        collector: "overview",
        severity: "warning",
      };

      // Baseline: scraped, a probe passed, and none of the injected-fault alerts is active.
      await untilQuery(`sandbox_probe_success{job="${JOB}"} == 1`);
      await untilQuery(`sandbox_node_status{job="${JOB}",status="ready"} == 1`);
      const before = await until("the overview collector is reported stale", (a) =>
        a.some((x) => matches(x, stale) && x.state === "firing"),
      );
      for (const w of wanted)
        expect(
          before.filter((a) => matches(a, w)),
          w.alertname,
        ).toEqual([]);

      s.state.setNodeStatus(node, "unhealthy");
      s.state.setTemplateStatus(template, "error", "build failed: exit status 1");
      s.faults.stream = { wrongStdout: true };
      s.faults.healthDown = true;
      // The overview's 503s also fire the error-ratio alert; its rate window is 5 minutes, so it
      // cannot resolve within the test and is checked for firing only.
      const errorRatio = {
        ...base,
        alertname: "SandboxExporterApiErrorRatioHigh",
        endpoint: "/cluster/overview",
      };
      const firing = await until("every injected fault's alert fires", (a) =>
        [...wanted, errorRatio].every((w) => a.some((x) => matches(x, w) && x.state === "firing")),
      );
      // Only the faulty node, not the healthy ones.
      const nodes = firing.filter((a) => a.labels.alertname === "SandboxNodeNotReady");
      expect(nodes.map((a) => a.labels.node)).toEqual([node]);

      s.state.setNodeStatus(node, "ready");
      s.state.setTemplateStatus(template, "ready");
      s.faults.clear();
      const names = new Set([...wanted, stale].map((w) => w.alertname));
      const after = await until("every alert resolves", (a) =>
        a.every((x) => !names.has(x.labels.alertname ?? "") || x.state === "inactive"),
      );
      expect(after.filter((a) => names.has(a.labels.alertname ?? ""))).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
