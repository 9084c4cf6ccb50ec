// A healthy fleet under a real Prometheus with the shipped rules, unchanged: no alert may be
// pending or firing. The exporter runs as the demo does (its flags, its healthy simulated platform,
// the example policy in dry-run) with every feature on, on both flavors: cost with a daily budget,
// lifecycle events (poll.events) and the E2B webhook (the E2B simulator pushes every event, signed;
// the sandboxapi one serves neither, so they must stay quiet there), and the probe's `http` and
// `autoresume` modules beside the quick one (autoresume is unsupported on sandboxapi: skipped, not
// failed). It polls every second and probes every 2 to 10 s.
//
// Why 90 s is enough: `for:` only delays pending -> firing, and a pending alert fails this test
// too, so every alert counts from the first evaluation its expression holds. The rules evaluate
// every second, and each rate() over [5m] or more has a value from its second sample on; in 90 s
// the exporter polls ~90 times, probes ~45 times (each probe's terminate reads its sandbox back),
// runs the http module ~18 times and the autoresume one ~9, and runs the policy on every walked
// snapshot, so every request a steady deployment makes is in the windows many times over. Alerts
// that compare with an hour or more before say nothing this early by design; the promtool fixture
// deploy/prometheus/tests/healthy-6h.test.yml covers their six hours. `ALERTS` keeps every
// evaluation's pending and firing alerts, so none is missed between two reads of the API.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import {
  demoEnv,
  demoExporterArgs,
  registerDemoWebhook,
  startDemoSimulator,
} from "../../src/simulator/demo-setup.js";
import type { Simulator } from "../../src/simulator/index.js";
import { systemClock } from "../../src/util/clock.js";
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
let dir: string | undefined;
let logLines: string[] = [];

afterEach(async () => {
  await prom?.stop();
  await exporter?.stop();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  [prom, exporter, sim, dir, logLines] = [undefined, undefined, undefined, undefined, []];
});

/**
 * The probe modules, every optional step the issue names on: the quick one every 2 s, `http`
 * every 5 s and `autoresume` every 10 s. Written over the demo's own probes file.
 */
const PROBES = [
  "probe:",
  "  enabled: true",
  "  template: base",
  "  modules:",
  "    - name: quick",
  "      schedule: 2s",
  "    - name: http",
  "      schedule: 5s",
  "      steps: [http]",
  "    - name: autoresume",
  "      schedule: 10s",
  "      steps: [autoresume]",
  "",
].join("\n");

/**
 * Starts the demo's healthy platform and an exporter with the demo's flags, every feature on:
 * polls every second, the probe modules above, events and the webhook secret on both flavors.
 */
async function startFleet(e2b: boolean): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), "healthy-alerts-"));
  sim = await startDemoSimulator(e2b);
  const args = demoExporterArgs(sim, e2b, dir);
  writeFileSync(join(dir, "probes.yaml"), PROBES);
  const secret = join(dir, "webhook-secret");
  writeFileSync(secret, "healthy-alerts-webhook-secret", { mode: 0o600 });
  const { config } = loadConfig({
    argv: [
      ...args,
      ...["--listen", "127.0.0.1:0", "--poll-schedule", "1s", "--log-format", "json"],
      // On E2B the demo already reads events and holds the secret the simulator signs with.
      ...(e2b ? [] : ["--poll-events", "--e2b-webhook-secret-file", secret]),
    ],
    env: demoEnv(sim),
    readFile: (path) => readFileSync(path, "utf8"),
  });
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  exporter = await startExporter(config, {
    logger: pino({ level: "info" }, sink),
    clock: systemClock,
    readFile: (path) => readFileSync(path, "utf8"),
  });
  if (e2b) registerDemoWebhook(sim, exporter.server.url);
}

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

/** The value of a one-series query, 0 when it has none. */
async function value(q: string): Promise<number> {
  return Number((await query(q))[0]?.value[1] ?? 0);
}

describe.each([
  { flavor: "sandboxapi", e2b: false },
  { flavor: "e2b", e2b: true },
])("the shipped alert rules on a healthy $flavor fleet", ({ e2b }) => {
  it(
    "leave every alert inactive with cost, events, the webhook, http and autoresume probes on",
    async () => {
      onTestFailed(() => {
        console.error(`--- prometheus output ---\n${prom?.output() ?? "(not started)"}`);
        console.error(`--- exporter log (last 40) ---\n${logLines.slice(-40).join("")}`);
      });
      await startFleet(e2b);
      prom = await startPrometheus({
        job: JOB,
        targets: [new URL(exporter!.server.url).host],
        ruleFiles: [RULES],
        interval: "1s",
      });

      // The window starts once a probe passed, so after Prometheus' first evaluations: before its
      // first scrape `up` is absent, and SandboxExporterAbsent is pending for a moment.
      await untilSeries(`sandbox_probe_success{job="${JOB}",module="quick"} == 1`);
      // Watching, not waiting for something: the ALERTS query below reads every evaluation of
      // the window at once.
      await sleep(OBSERVE_S * 1_000);
      const window = `${OBSERVE_S}s`;
      const sel = `job="${JOB}"`;

      // Not vacuous: the rules loaded and evaluate without error, the exporter was scraped the
      // whole time, the probe's terminate read its sandbox back (the request whose expected 404
      // must not count as an error), and every feature produced its series.
      const groups = (await prom.api<{ groups: RuleGroup[] }>("/api/v1/rules")).groups;
      const rules = groups.flatMap((g) => g.rules);
      expect(rules.filter((r) => r.type === "alerting").length).toBeGreaterThan(10);
      expect(rules.filter((r) => r.health !== "ok")).toEqual([]);
      const up = await query(`min_over_time(up{${sel}}[${window}])`);
      expect(up.map((r) => r.value[1])).toEqual(["1"]);
      const reads = `sum(increase(sandbox_exporter_api_request_duration_seconds_count{${sel},endpoint="/sandboxes/{id}",method="GET"}[${window}]))`;
      expect(await value(reads)).toBeGreaterThan(10);
      const probes = await query(`min_over_time(sandbox_probe_success{${sel}}[${window}])`);
      expect(probes.map((r) => r.value[1])).toEqual(["1", "1", "1"]);
      const phase = (p: string): Promise<number> =>
        value(
          `sum(increase(sandbox_probe_duration_seconds_count{${sel},phase="${p}"}[${window}]))`,
        );
      expect(await phase("http_request")).toBeGreaterThan(3);
      // No auto-resume on sandboxapi: the step is skipped and says so.
      if (e2b) expect(await phase("autoresume_wake")).toBeGreaterThan(1);
      else
        expect(await value(`max(sandbox_probe_step_supported{${sel},step="autoresume"})`)).toBe(0);
      expect(await value(`sum(sandbox_estimated_cost_total{${sel}})`)).toBeGreaterThan(0);
      expect(await value(`count(sandbox_cost_budget{${sel},period="daily"})`)).toBe(1);
      if (e2b) {
        const accepted = `sum(increase(sandbox_webhook_deliveries_total{${sel},result="accepted"}[${window}]))`;
        expect(await value(accepted)).toBeGreaterThan(5);
        expect(await value(`sum(sandbox_sandboxes_killed_total{${sel}})`)).toBeGreaterThan(5);
      }

      const alerts = await query(`max_over_time(ALERTS[${window}])`);
      expect(alerts.map((a) => describeAlert(a.metric)).sort()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
