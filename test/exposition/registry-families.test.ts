import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registryAsOpenMetrics } from "../../src/exposition/openmetrics.js";
import {
  ExpositionDrops,
  registerDropFamilies,
  registryAsText,
} from "../../src/exposition/registry-families.js";

function registry(): Registry {
  const r = new Registry();
  const h = new Histogram({
    name: "req_seconds",
    help: "a \\ help\nwith two lines",
    labelNames: ["endpoint", "code"],
    buckets: [0.1, 1],
    registers: [r],
  });
  h.observe({ endpoint: '/a"b\\c\nd', code: "200" }, 0.5);
  h.observe({ endpoint: "/x", code: "500" }, 3);
  new Counter({ name: "done_total", help: "h", labelNames: ["k"], registers: [r] }).inc(
    { k: "v" },
    2,
  );
  new Gauge({ name: "plain", help: "h", registers: [r] }).set(1e-7);
  return r;
}

describe("a registry read one family at a time", () => {
  // Except NaN (NaN, not Nan) and integers from 1e21 (all digits), as the hand-written families.
  it("writes the 0.0.4 text byte for byte as prom-client does", async () => {
    const r = registry();
    expect(await registryAsText(r)).toBe(await r.metrics());
  });

  it("leaves out a counter sample that is NaN and counts it, and keeps a NaN gauge", async () => {
    const r = registry();
    const drops = new ExpositionDrops();
    registerDropFamilies(r, "x", drops);
    // prom-client's inc lets NaN through (it refuses only Infinity): a counter never means it.
    new Counter({ name: "bad_total", help: "h", labelNames: ["k"], registers: [r] }).inc(
      { k: "n" },
      Number.NaN,
    );
    new Gauge({ name: "ratio", help: "h", registers: [r] }).set(Number.NaN);
    const text = await registryAsText(r, drops);
    expect(text).not.toContain('bad_total{k="n"}');
    expect(text).toContain("ratio NaN");
    expect(text).toContain('x_exporter_nonfinite_values_dropped_total{family="bad_total"} 1');
    const om = await registryAsOpenMetrics(r, drops);
    expect(om).not.toContain('bad_total{k="n"}');
    expect(om).toContain('x_exporter_nonfinite_values_dropped_total{family="bad_total"} 2');
  });
});
