// A healthy fleet under a real Prometheus with the shipped rules, unchanged: no alert may be
// pending or firing. The exporter runs as the demo does (per-sandbox series, the default probe
// module, the example policy in dry-run), but polls every second and probes every 2 s.
//
// Why 90 s is enough: `for:` only delays pending -> firing, and a pending alert fails this test
// too, so every alert counts from the first evaluation its expression holds. The rules evaluate
// every second, and each rate() over [5m] or more has a value from its second sample on; in 90 s
// the exporter polls ~90 times, probes ~45 times (each probe's terminate reads its sandbox back),
// sweeps orphans ~4 times (every 10th probe) and runs the policy on every walked snapshot, so every
// request a steady deployment makes is in the windows many times over. `ALERTS` keeps every
// evaluation's pending and firing alerts, so none is missed between two reads of the API.
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import type { Exporter } from "../../src/app.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startDemoLike } from "../helpers/exporter.js";
import { type RunningPrometheus, startPrometheus } from "../helpers/prometheus.js";

const JOB = "sandbox-exporter";
const RULES = join(
  import.meta.dirname,
  "..",
  "..",
  "deploy",
  "prometheus",
  "rules",
  "sandbox-exporter.rules.yml",
);
/** How long the healthy fleet is watched once the first probe passed. */
const OBSERVE_S = 90;
/** Longest wait for the first probe to pass and the rules to be loaded. */
const WARM_UP_MS = 30_000;
const POLL_EVERY_MS = 500;
const TEST_TIMEOUT_MS = WARM_UP_MS + (OBSERVE_S + 30) * 1_000;

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}
interface RuleGroup {
  rules: Array<{ name: string; type: string; health: string; lastError?: string }>;
}

let sim: Simulator | undefined;
let exporter: Exporter | undefined;
let prom: RunningPrometheus | undefined;
const logLines: string[] = [];

afterAll(async () => {
  await prom?.stop();
  await exporter?.stop();
  await sim?.close();
});

async function query(q: string): Promise<Sample[]> {
  return (await prom!.api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(q)}`))
    .result;
}

/** Polls Prometheus (an external process, so short sleeps) until `q` returns a series. */
async function untilSeries(q: string): Promise<void> {
  const deadline = Date.now() + WARM_UP_MS;
  for (let i = 0; i < WARM_UP_MS / POLL_EVERY_MS && Date.now() < deadline; i++) {
    if ((await query(q)).length > 0) return;
    await sleep(POLL_EVERY_MS);
  }
  throw new Error(`timed out waiting for ${q} to return data`);
}

/** `alertname{label="value",...} pending|firing`, for a readable failure. */
function describeAlert(m: Record<string, string>): string {
  const { __name__: _, alertname, alertstate, ...rest } = m;
  const labels = Object.entries(rest)
    .filter(([k]) => k !== "job" && k !== "instance")
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  return `${alertname}{${labels}} ${alertstate}`;
}

describe("the shipped alert rules on a healthy fleet", () => {
  it(
    "leave every alert inactive while the demo's fleet, probe and dry-run policy run normally",
    async () => {
      onTestFailed(() => {
        console.error(`--- prometheus output ---\n${prom?.output() ?? "(not started)"}`);
        console.error(`--- exporter log (last 40) ---\n${logLines.slice(-40).join("")}`);
      });
      sim = await startSimulator({ sandboxes: 300, templates: 5, nodes: 4, apiKey: "demo-key" });
      exporter = await startDemoLike(sim, "2s", logLines);
      prom = await startPrometheus({
        job: JOB,
        targets: [new URL(exporter.server.url).host],
        ruleFiles: [RULES],
        interval: "1s",
      });

      // The window starts once a probe passed, so after Prometheus' first evaluations: before its
      // first scrape `up` is absent, and SandboxExporterAbsent is pending for a moment.
      await untilSeries(`sandbox_probe_success{job="${JOB}"} == 1`);
      // Watching, not waiting for something: the ALERTS query below reads every evaluation of
      // the window at once.
      await sleep(OBSERVE_S * 1_000);
      const window = `${OBSERVE_S}s`;

      // Not vacuous: the rules loaded and evaluate without error, the exporter was scraped the
      // whole time, and the probe's terminate read its sandbox back (the request whose expected
      // 404 must not count as an error).
      const groups = (await prom.api<{ groups: RuleGroup[] }>("/api/v1/rules")).groups;
      const rules = groups.flatMap((g) => g.rules);
      expect(rules.filter((r) => r.type === "alerting").length).toBeGreaterThan(10);
      expect(rules.filter((r) => r.health !== "ok")).toEqual([]);
      const up = await query(`min_over_time(up{job="${JOB}"}[${window}])`);
      expect(up.map((r) => r.value[1])).toEqual(["1"]);
      const reads = await query(
        `sum(increase(sandbox_exporter_api_request_duration_seconds_count{job="${JOB}",endpoint="/sandboxes/{id}",method="GET"}[${window}]))`,
      );
      expect(Number(reads[0]?.value[1] ?? 0)).toBeGreaterThan(10);
      const probes = await query(`min_over_time(sandbox_probe_success{job="${JOB}"}[${window}])`);
      expect(probes.map((r) => r.value[1])).toEqual(["1"]);

      const alerts = await query(`max_over_time(ALERTS[${window}])`);
      expect(alerts.map((a) => describeAlert(a.metric)).sort()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
