// Counters that dashboards and rules read exist at 0 from the start, so a stat panel of a healthy
// system reads 0 (not "No data") and increase() counts the first event.
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { PolicyMetrics } from "../../src/policy/policy-metrics.js";
import { PolicySectionSchema, policySpec } from "../../src/policy/policy-settings.js";
import { ProbeFamilies, ProbeMetrics } from "../../src/probe/probe-metrics.js";
import { PROBE_PHASES } from "../../src/probe/probe-steps.js";
import { sampleLines } from "./fixtures.js";

const rules = [
  { name: "idle-dev", match: { states: ["running"] }, idleFor: "30m", action: "pause" },
  { name: "report", match: { states: ["running"] }, action: "log" },
];

describe("PolicyMetrics", () => {
  it("has done, dry_run and failed decisions at 0 for every rule and its action once rules load", async () => {
    const registry = new Registry();
    const m = new PolicyMetrics(registry);
    m.setRules(policySpec(PolicySectionSchema.parse({ rules })));
    const lines = sampleLines(await registry.metrics()).filter((l) =>
      l.startsWith("sandbox_policy_decisions_total"),
    );
    expect(lines).toEqual(
      ["idle-dev|pause", "report|log"].flatMap((ra) => {
        const [rule, action] = ra.split("|");
        return ["done", "dry_run", "failed"].map(
          (result) =>
            `sandbox_policy_decisions_total{rule="${rule}",action="${action}",result="${result}"} 0`,
        );
      }),
    );
  });
});

describe("ProbeMetrics", () => {
  const failureLines = async (registry: Registry): Promise<string[]> =>
    sampleLines(await registry.metrics()).filter((l) =>
      l.startsWith("sandbox_probe_failures_total"),
    );

  it("has every phase and reason of sandbox_probe_failures_total at 0 before any probe ran", async () => {
    const registry = new Registry();
    const f = new ProbeFamilies(registry, { namespace: "sandbox" });
    new ProbeMetrics(f, f.idOf("quick", "base"));
    const lines = await failureLines(registry);
    for (const phase of PROBE_PHASES)
      for (const reason of ["timeout", "http_status", "wrong_output", "not_deleted", "other"])
        expect(lines).toContain(
          `sandbox_probe_failures_total{module="quick",template="base",phase="${phase}",reason="${reason}"} 0`,
        );
    expect(lines.every((l) => l.endsWith(" 0"))).toBe(true);
  });

  it("leaves the on-demand answer (no history) with the failures of its own probe only", async () => {
    const registry = new Registry();
    const f = new ProbeFamilies(registry, { namespace: "sandbox", history: false });
    new ProbeMetrics(f, f.idOf("quick", "base"));
    expect(await failureLines(registry)).toEqual([]);
  });
});
