import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CostAccountant } from "../../src/cost/cost-accountant.js";
import { registerCostFamilies } from "../../src/cost/cost-families.js";
import { type CostSettings, E2B_PRICES } from "../../src/cost/cost-settings.js";
import { normalizeLifecycleEvent } from "../../src/platform/normalize/events.js";
import { FakeClock } from "../../src/util/clock.js";
import { samples } from "../helpers/exporter.js";

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
  registerCostFamilies(a, {
    registry,
    ns: "sandbox",
    settings: () => settings,
    label: (v) => v,
    maxTemplates,
    nonFinite: () => undefined,
  });
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

  it("attribute a killed run whose E2B event has no sandbox_metadata to none, so each key sums to the spend (old: left out)", async () => {
    const file = join(import.meta.dirname, "..", "fixtures", "e2b", "lifecycle-events");
    const raw = JSON.parse(readFileSync(join(file, "webhook-snake-case.json"), "utf8"));
    // E2B leaves sandbox_metadata out for a sandbox created without metadata.
    const bare = structuredClone(raw);
    bare.sandbox_id = "sbx-without-metadata";
    bare.id = "ev-2";
    delete bare.event_data.sandbox_metadata;
    const run = 12.123 * (2 * E2B_PRICES.vcpuSecond + 0.5 * E2B_PRICES.memoryGiBSecond);
    const start = Date.UTC(2025, 7, 6, 20);
    const a = new CostAccountant({
      prices: settings.prices,
      attributeBy: ["<custom-key>"],
      runningStates: ["running"],
      pausedStates: ["paused"],
      origin: start,
      clock: new FakeClock(start + 3_600_000),
    });
    a.observeEvent(normalizeLifecycleEvent(raw));
    a.observeEvent(normalizeLifecycleEvent(bare));
    const registry = new Registry();
    registerCostFamilies(a, {
      registry,
      ns: "sandbox",
      settings: () => ({ ...settings, attributeBy: ["<custom-key>"] }),
      label: (v) => v,
      maxTemplates: 10,
      nonFinite: () => undefined,
    });
    const at = samples(await registry.metrics());
    const sum = (prefix: string): number =>
      [...at].filter(([k]) => k.startsWith(prefix)).reduce((n, [, v]) => n + v, 0);
    expect(sum("sandbox_estimated_cost_total{")).toBeCloseTo(2 * run, 15);
    const attributed = (value: string): number | undefined =>
      at.get(
        `sandbox_estimated_cost_attributed_total{key="<custom-key>",value="${value}",currency="USD"}`,
      );
    expect(attributed("<custom-value>")).toBeCloseTo(run, 15);
    expect(attributed("none")).toBeCloseTo(run, 15);
    expect(sum("sandbox_estimated_cost_attributed_total{")).toBeCloseTo(2 * run, 15);
  });
});
