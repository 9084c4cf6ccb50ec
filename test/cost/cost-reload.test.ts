// A reload applies new prices and budget from that moment (no counter goes down), and refuses,
// naming the setting, a change that takes a restart (issue 36, item 4), over POST /-/reload.
import { afterEach, describe, expect, it } from "vitest";
import { type CostExporter, startCostExporter } from "./cost-exporter.js";

let c: CostExporter | undefined;
afterEach(async () => {
  await c?.stop();
  c = undefined;
});

const LIFECYCLE = "--web.enable-lifecycle";
const PRICES = ["--cost-vcpu-second", "0.001", "--cost-memory-gib-second", "0"];
const RELOAD_OK = "sandbox_exporter_config_last_reload_successful";
const VCPU_PRICE = 'sandbox_cost_price{resource="vcpu",state="running",currency="USD"}';
const BUDGET = 'sandbox_cost_budget{period="daily",currency="USD"}';

/** The running spend of the one template. */
function spend(at: Map<string, number>): number {
  const key = [...at.keys()].find(
    (k) => k.startsWith("sandbox_estimated_cost_total{") && k.includes('state="running"'),
  );
  return key === undefined ? Number.NaN : (at.get(key) as number);
}

describe("a reload of the cost settings", () => {
  it("applies a new price from that moment, and the budget, without taking back what was counted (old: 200 and nothing changed)", async () => {
    c = await startCostExporter([LIFECYCLE, ...PRICES, "--cost-budget-daily", "10"]);
    await c.cycleAfter(100_000);
    const before = await c.scrape();
    // 2 vCPUs for 100 s at 0.001.
    expect(spend(before.at)).toBeCloseTo(0.2, 9);
    c.argv = [LIFECYCLE, "--cost-vcpu-second", "0.01", "--cost-memory-gib-second", "0"];
    c.argv.push("--cost-budget-daily", "20");
    expect(await c.reload()).toEqual({ status: 200, text: "reloaded\n" });
    const after = await c.scrape();
    expect(after.at.get(RELOAD_OK)).toBe(1);
    expect(after.at.get(VCPU_PRICE)).toBe(0.01);
    expect(after.at.get(BUDGET)).toBe(20);
    // Nothing counted before the reload is priced again.
    expect(spend(after.at)).toBeCloseTo(0.2, 9);
    await c.cycleAfter(100_000);
    // Then 100 s more at the new price: 0.2 + 2 x 100 x 0.01.
    expect(spend((await c.scrape()).at)).toBeCloseTo(2.2, 9);
    // A price lowered to 0 adds nothing from then on, and takes nothing back.
    c.argv = [LIFECYCLE, "--cost-vcpu-second", "0", "--cost-memory-gib-second", "0"];
    expect((await c.reload()).status).toBe(200);
    await c.cycleAfter(100_000);
    const last = await c.scrape(true);
    expect(spend(last.at)).toBeCloseTo(2.2, 9);
    expect(last.at.has(BUDGET)).toBe(false);
  });

  it("refuses a change of currency or of attribution keys, naming it, and keeps the old settings (old: 200 and nothing changed)", async () => {
    c = await startCostExporter([LIFECYCLE, ...PRICES]);
    await c.cycleAfter(10_000);
    for (const [flags, setting] of [
      [["--cost-currency", "EUR", "--cost-vcpu-second", "0.5"], "cost.currency"],
      [["--cost-attribute-by", "owner", "--cost-vcpu-second", "0.5"], "cost.attributeBy"],
    ] as const) {
      c.argv = [LIFECYCLE, ...PRICES, ...flags];
      const answer = await c.reload();
      expect(answer.status).toBe(500);
      expect(answer.text).toContain(`${setting} changed`);
      expect(answer.text).toContain("takes a restart");
      const { at } = await c.scrape();
      expect(at.get(RELOAD_OK)).toBe(0);
      // Nothing of that reload applied, the price given with it neither.
      expect(at.get(VCPU_PRICE)).toBe(0.001);
    }
  });

  it('refuses turning cost accounting off, or on when it was off at start, naming cost.enabled (old: 200 "reloaded")', async () => {
    c = await startCostExporter([LIFECYCLE, ...PRICES]);
    c.argv = [LIFECYCLE, ...PRICES, "--no-cost"];
    const off = await c.reload();
    expect(off.status).toBe(500);
    expect(off.text).toMatch(
      /cost\.enabled changed: turning cost accounting off .*takes a restart/,
    );
    expect((await c.scrape()).at.get(RELOAD_OK)).toBe(0);
    await c.stop();
    c = await startCostExporter([LIFECYCLE, "--no-cost"]);
    c.argv = [LIFECYCLE];
    const on = await c.reload();
    expect(on.status).toBe(500);
    expect(on.text).toMatch(/cost\.enabled changed: turning cost accounting on .*takes a restart/);
    expect((await c.scrape()).at.get(RELOAD_OK)).toBe(0);
    // An unchanged configuration still reloads.
    c.argv = [LIFECYCLE, "--no-cost"];
    expect((await c.reload()).status).toBe(200);
  });
});
