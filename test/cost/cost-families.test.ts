import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CostAccountant } from "../../src/cost/cost-accountant.js";
import { registerCostFamilies } from "../../src/cost/cost-families.js";
import { type CostSettings, E2B_PRICES } from "../../src/cost/cost-settings.js";
import { FakeClock } from "../../src/util/clock.js";

const T0 = Date.UTC(2026, 10, 1);

const settings: CostSettings = {
  enabled: true,
  prices: { ...E2B_PRICES, templates: { t3: { vcpuSecond: 1 } } },
  currency: "USD",
  attributeBy: [],
  maxAttributedValues: 20,
  budget: {},
};

/** The families over an accountant that saw one 2-vCPU sandbox of each template for 10 s. */
async function exposition(templates: string[], maxTemplates: number): Promise<string> {
  const clock = new FakeClock(T0 + 10_000);
  const a = new CostAccountant({
    prices: settings.prices,
    attributeBy: [],
    runningStates: ["running"],
    pausedStates: ["paused"],
    origin: T0,
    clock,
  });
  a.observeWalk(T0 + 10_000, (visit) => {
    for (const tpl of templates)
      visit({
        id: `sbx-${tpl}`,
        templateId: tpl,
        state: "running",
        cpuCount: 2,
        memoryMB: 1024,
        startedAt: T0,
        endAt: undefined,
        metadata: undefined,
      });
  });
  const registry = new Registry();
  registerCostFamilies(a, { registry, ns: "sandbox", settings, label: (v) => v, maxTemplates });
  return registry.metrics();
}

function value(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("the cost families", () => {
  it("give the first metrics.maxEventTemplates templates series and sum the rest as other", async () => {
    const text = await exposition(["t1", "t2", "t3", "t4"], 2);
    const vcpu = (tpl: string) =>
      value(text, `sandbox_vcpu_seconds_total{template="${tpl}",state="running"}`);
    expect([vcpu("t1"), vcpu("t2"), vcpu("t3"), vcpu("t4")]).toEqual([
      20,
      20,
      undefined,
      undefined,
    ]);
    expect(vcpu("other")).toBe(40);
    // Each template past the cap is priced at its own rates before it is summed.
    const cost = value(
      text,
      'sandbox_estimated_cost_total{template="other",state="running",currency="USD"}',
    );
    const t4 = 10 * (2 * E2B_PRICES.vcpuSecond + E2B_PRICES.memoryGiBSecond);
    const t3 = 10 * (2 * 1 + E2B_PRICES.memoryGiBSecond);
    expect(cost).toBeCloseTo(t3 + t4, 12);
  });

  it("list every drop reason at 0, missing_resources and bad_execution among them", async () => {
    const text = await exposition([], 2);
    for (const reason of ["bad_execution", "missing_resources", "bad_resources"])
      expect(value(text, `sandbox_cost_inputs_dropped_total{reason="${reason}"}`)).toBe(0);
  });
});
