// One value that is not finite never fails a scrape: its series is left out and counted, and the
// rest of the exposition is served, in both formats (issue 36, item 3).
import { Counter, Gauge } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type CostExporter, startCostExporter } from "./cost-exporter.js";

let c: CostExporter | undefined;
afterEach(async () => {
  await c?.stop();
  c = undefined;
});

/** The value of the one sample whose name and labels start with `prefix` (undefined: none). */
function one(at: Map<string, number>, prefix: string): number | undefined {
  const keys = [...at.keys()].filter((k) => k.startsWith(prefix));
  expect(keys.length).toBeLessThanOrEqual(1);
  return keys[0] === undefined ? undefined : at.get(keys[0]);
}

const DROPPED =
  'sandbox_exporter_nonfinite_values_dropped_total{family="sandbox_estimated_cost_total"}';

describe("a spend that overflows to Infinity", () => {
  it("leaves out its series, counts it, and serves the rest with 200 in both formats (old: 500 on every scrape)", async () => {
    // What --cost-vcpu-second=1e308 did before prices were bounded: 2 vCPUs overflow at once.
    c = await startCostExporter([], (config) => {
      config.cost.prices.vcpuSecond = 1e308;
    });
    await c.cycleAfter(60_000);
    const seen: number[] = [];
    for (const openMetrics of [false, true]) {
      const { status, text, at } = await c.scrape(openMetrics);
      expect(status).toBe(200);
      expect(text).not.toMatch(/ (\+Inf|-Inf|NaN|Nan)$/m);
      // The running spend is left out; the paused spend, the resource-seconds and the rest are served.
      expect(one(at, 'sandbox_estimated_cost_total{template="')).toBe(0);
      expect(text).toContain('state="paused",currency="USD"} 0');
      expect([...at.keys()].filter((k) => k.startsWith("sandbox_vcpu_seconds_total"))).toHaveLength(
        2,
      );
      expect(
        at.get(`sandbox_vcpu_seconds_total{template="${templateOf(text)}",state="running"}`),
      ).toBe(120);
      expect(at.get("sandbox_exporter_config_last_reload_successful")).toBe(1);
      if (openMetrics) expect(text.endsWith("# EOF\n")).toBe(true);
      seen.push(at.get(DROPPED) ?? 0);
    }
    // Counted in the scrape that left it out, and again in each scrape after.
    expect(seen[0]).toBeGreaterThanOrEqual(1);
    expect(seen[1]).toBeGreaterThan(seen[0] as number);
  });

  it("leaves out a registry family that fails to read, counted, in both formats (old: 500)", async () => {
    c = await startCostExporter([]);
    const registry = c.exporter.metrics.registry;
    new Counter({
      name: "hostile_total",
      help: "inc(Infinity) throws in prom-client",
      registers: [registry],
      collect() {
        this.inc(Number.POSITIVE_INFINITY);
      },
    });
    // A gauge may mean NaN ("unknown"): it is kept.
    new Gauge({ name: "unknown_ratio", help: "NaN on purpose", registers: [registry] }).set(
      Number.NaN,
    );
    await c.cycleAfter(15_000);
    for (const openMetrics of [false, true]) {
      const { status, text, at } = await c.scrape(openMetrics);
      expect(status).toBe(200);
      expect(text).not.toMatch(/^(# HELP )?hostile/m);
      expect(at.get("unknown_ratio")).toBeNaN();
      expect(
        at.get(`sandbox_vcpu_seconds_total{template="${templateOf(text)}",state="running"}`),
      ).toBe(30);
      expect(at.get('sandbox_exporter_family_render_failures_total{family="hostile_total"}')).toBe(
        openMetrics ? 2 : 1,
      );
    }
  });
});

/** The simulator's one template id, as the exposition labels it. */
function templateOf(text: string): string {
  const m = /sandbox_vcpu_seconds_total\{template="([^"]+)"/.exec(text);
  if (!m?.[1]) throw new Error("no vcpu series");
  return m[1];
}
