// deploy/slo/sloth.yml must say what the shipped SLO rules do: the same objectives, and SLIs that
// give the same error ratio as the shipped recording rules on the same series (checked by promtool).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { z } from "zod";

const ROOT = join(import.meta.dirname, "..", "..");
const RULES = join(ROOT, "deploy", "prometheus", "rules", "sandbox-exporter.rules.yml");
const SLOTH = join(ROOT, "deploy", "slo", "sloth.yml");
/** The windows of the shipped recording rules. */
const WINDOWS = ["5m", "30m", "1h", "2h", "6h", "1d", "3d"];

const SlothSpec = z.object({
  version: z.literal("prometheus/v1"),
  service: z.string(),
  slos: z.array(
    z.object({
      name: z.string(),
      objective: z.number(),
      sli: z.object({ events: z.object({ error_query: z.string(), total_query: z.string() }) }),
      alerting: z.object({ name: z.string() }),
    }),
  ),
});
const Rules = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(z.object({ record: z.string().optional(), expr: z.string() }).loose()),
    }),
  ),
});

/** Each SLO of the spec and the shipped rules it stands for. */
const SHIPPED: Record<string, { budget: string; ratio: string; alert: string }> = {
  "probe-availability": {
    budget: "slo:sandbox_probe_availability_error_budget:ratio",
    ratio: "job_module:sandbox_probe_errors:ratio_rate",
    alert: "SandboxProbeAvailabilityBudgetBurn",
  },
  "probe-latency": {
    budget: "slo:sandbox_probe_latency_error_budget:ratio",
    ratio: "job_module:sandbox_probe_slow_phases:ratio_rate",
    alert: "SandboxProbeLatencyBudgetBurn",
  },
  "probe-autopause": {
    budget: "slo:sandbox_probe_autopause_error_budget:ratio",
    ratio: "job_module:sandbox_probe_autopause_errors:ratio_rate",
    alert: "SandboxProbeAutopauseBudgetBurn",
  },
  "probe-http": {
    budget: "slo:sandbox_probe_http_error_budget:ratio",
    ratio: "job_module:sandbox_probe_http_errors:ratio_rate",
    alert: "SandboxProbeHttpBudgetBurn",
  },
  "probe-autoresume": {
    budget: "slo:sandbox_probe_autoresume_error_budget:ratio",
    ratio: "job_module:sandbox_probe_autoresume_errors:ratio_rate",
    alert: "SandboxProbeAutoresumeBudgetBurn",
  },
  "probe-wake-latency": {
    budget: "slo:sandbox_probe_wake_latency_error_budget:ratio",
    ratio: "job_module:sandbox_probe_wake_latency_errors:ratio_rate",
    alert: "SandboxProbeWakeLatencyBudgetBurn",
  },
};

const spec = SlothSpec.parse(parse(readFileSync(SLOTH, "utf8")));
const rules = Rules.parse(parse(readFileSync(RULES, "utf8"))).groups.flatMap((g) => g.rules);
const dir = mkdtempSync(join(tmpdir(), "slo-specs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the Sloth spec", () => {
  it("has one SLO per shipped SLO, with the shipped error budget as its objective", () => {
    expect(spec.slos.map((s) => s.name).sort()).toEqual(Object.keys(SHIPPED).sort());
    for (const slo of spec.slos) {
      const shipped = SHIPPED[slo.name]!;
      const budget = rules.find((r) => r.record === shipped.budget)?.expr;
      const value = Number(/^vector\(([\d.]+)\)$/.exec(budget?.trim() ?? "")?.[1]);
      expect(Number.isFinite(value), `${shipped.budget}: ${budget}`).toBe(true);
      expect(slo.objective).toBeCloseTo(100 * (1 - value), 9);
      expect(slo.alerting.name).toBe(shipped.alert);
    }
  });

  it("gives the same error ratio per module as the shipped recording rules, in every window", () => {
    // Per module and minute: 9 passed and 1 failed run; 8 of 10 create and exec phases within 10 s;
    // 2 of 10 auto-pause rounds failed (other phases' failures are not its errors).
    const id = 'job="j",module="m",template="t"';
    const series = [
      [`sandbox_probe_runs_total{${id},result="success"}`, "0+9x300"],
      [`sandbox_probe_runs_total{${id},result="failure"}`, "0+1x300"],
      ...["create", "exec", "terminate"].flatMap((phase) => [
        [`sandbox_probe_duration_seconds_bucket{${id},phase="${phase}",le="10"}`, "0+8x300"],
        [`sandbox_probe_duration_seconds_bucket{${id},phase="${phase}",le="+Inf"}`, "0+10x300"],
        [`sandbox_probe_duration_seconds_count{${id},phase="${phase}"}`, "0+10x300"],
      ]),
      [`sandbox_probe_duration_seconds_count{${id},phase="autopause_wait"}`, "0+10x300"],
      [
        `sandbox_probe_failures_total{${id},phase="autopause_wait",reason="not_auto_paused"}`,
        "0+1x300",
      ],
      [`sandbox_probe_failures_total{${id},phase="autopause_check",reason="file_lost"}`, "0+1x300"],
      [`sandbox_probe_failures_total{${id},phase="exec",reason="exit_code"}`, "0+5x300"],
      // 1 of 10 HTTP checks, 3 of 10 auto-resume checks fail; 1 of 10 wakes is slower than 10 s.
      [`sandbox_probe_duration_seconds_count{${id},phase="http_wait_ready"}`, "0+10x300"],
      [`sandbox_probe_failures_total{${id},phase="http_request",reason="port_closed"}`, "0+1x300"],
      [`sandbox_probe_duration_seconds_count{${id},phase="autoresume_pause"}`, "0+10x300"],
      [
        `sandbox_probe_failures_total{${id},phase="autoresume_wake",reason="not_auto_resumed"}`,
        "0+3x300",
      ],
      [`sandbox_probe_wake_seconds_count{${id}}`, "0+10x300"],
      [`sandbox_probe_wake_seconds_bucket{${id},le="10"}`, "0+9x300"],
    ].map(([s, values]) => ({ series: s, values }));
    const expected: Record<string, number> = {
      "probe-availability": 0.1,
      "probe-latency": 0.2,
      "probe-autopause": 0.2,
      "probe-http": 0.1,
      "probe-autoresume": 0.3,
      "probe-wake-latency": 0.1,
    };
    const tests = spec.slos.flatMap((slo) =>
      WINDOWS.flatMap((w) => {
        const q = (s: string) => s.replaceAll("{{.window}}", w);
        const sli = `(${q(slo.sli.events.error_query)}) / (${q(slo.sli.events.total_query)})`;
        const value = expected[slo.name]!;
        const record = `${SHIPPED[slo.name]!.ratio}${w}`;
        // Equal up to float rounding: the two forms sum in different orders.
        const near = (e: string) => ({
          expr: `abs((${e}) - ${value}) < bool 1e-9`,
          eval_time: "4h",
          exp_samples: [{ labels: '{job="j",module="m"}', value: 1 }],
        });
        return [near(sli), near(record)];
      }),
    );
    const file = join(dir, "sloth-agrees.test.yml");
    writeFileSync(
      file,
      stringify({
        rule_files: [RULES],
        evaluation_interval: "1m",
        tests: [{ interval: "1m", input_series: series, promql_expr_test: tests }],
      }),
    );
    const r = spawnSync("promtool", ["test", "rules", file], { encoding: "utf8" });
    expect(r.error).toBeUndefined();
    expect(`${r.stdout}${r.stderr}`).toContain("SUCCESS");
    expect(r.status).toBe(0);
  });
});
