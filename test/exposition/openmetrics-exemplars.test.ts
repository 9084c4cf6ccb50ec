// Exemplars in the OpenMetrics text written from prom-client's JSON, and none in the 0.0.4 text.
import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registryAsOpenMetrics } from "../../src/exposition/openmetrics.js";
import { openMetricsProblems } from "../metrics/fixtures.js";

/** OpenMetrics 1.0's exemplar: ` # {labels} value [timestamp]` after a sample's value. */
const EXEMPLAR =
  / # \{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,|(?=\})))+\} (\S+)(?: (\d+(?:\.\d+)?))?$/;

/** A registry in the text format holding one histogram (and counter), exemplars on or off. */
function registryWith(exemplars: boolean): {
  registry: Registry;
  histogram: Histogram<string>;
  counter: Counter<string>;
} {
  const registry = new Registry();
  const histogram = new Histogram({
    name: "h_seconds",
    help: "h",
    labelNames: ["phase"],
    buckets: [0.1, 1, 10],
    enableExemplars: exemplars,
    registers: [],
  });
  const counter = new Counter({
    name: "c_total",
    help: "c",
    labelNames: ["phase"],
    enableExemplars: exemplars,
    registers: [],
  });
  registry.registerMetric(histogram);
  registry.registerMetric(counter);
  return { registry, histogram, counter };
}

/** The same observations in both registries; exemplar labels only where they are on. */
function observeBoth(exemplarLabels: Record<string, string>) {
  const on = registryWith(true);
  const off = registryWith(false);
  for (const [phase, value] of [
    ["create", 0.5],
    ["create", 0.05],
    ["exec", 20],
  ] as const) {
    on.histogram.observe({ labels: { phase }, value, exemplarLabels });
    off.histogram.labels({ phase }).observe(value);
    on.counter.inc({ labels: { phase }, value: 1, exemplarLabels });
    off.counter.labels({ phase }).inc(1);
  }
  return { on, off };
}

/** Body lines carrying an exemplar, without the ` # ...` part checked by EXEMPLAR. */
function withoutExemplars(text: string): string {
  return text
    .split("\n")
    .map((l) => l.replace(/ # \{.*$/, ""))
    .join("\n");
}

describe("registryAsOpenMetrics with exemplars", () => {
  it("writes each bucket's latest exemplar on the bucket its value fell in, and on counter totals", async () => {
    const { on } = observeBoth({ sandbox_id: "sbx-1", module: "default" });
    const text = `${await registryAsOpenMetrics(on.registry)}# EOF\n`;
    const lines = text.split("\n");
    const line = (prefix: string) => lines.find((l) => l.startsWith(prefix)) ?? "";
    // 0.5 lands in (0.1, 1], 0.05 in (0, 0.1], 20 past the last bound: +Inf.
    expect(line('h_seconds_bucket{le="0.1",phase="create"}')).toMatch(
      /^h_seconds_bucket\{le="0\.1",phase="create"\} 1 # \{sandbox_id="sbx-1",module="default"\} 0\.05 \d+(\.\d+)?$/,
    );
    expect(line('h_seconds_bucket{le="1",phase="create"}')).toMatch(
      / 2 # \{sandbox_id="sbx-1",module="default"\} 0\.5 \d/,
    );
    expect(line('h_seconds_bucket{le="10",phase="create"}')).toBe(
      'h_seconds_bucket{le="10",phase="create"} 2',
    );
    expect(line('h_seconds_bucket{le="+Inf",phase="create"}')).toBe(
      'h_seconds_bucket{le="+Inf",phase="create"} 2',
    );
    expect(line('h_seconds_bucket{le="+Inf",phase="exec"}')).toMatch(
      / 1 # \{sandbox_id="sbx-1",module="default"\} 20 \d/,
    );
    expect(line('c_total{phase="exec"}')).toMatch(
      /^c_total\{phase="exec"\} 1 # \{sandbox_id="sbx-1"/,
    );
    // Never on _sum or _count, as OpenMetrics allows them on buckets and counter totals only.
    expect(lines.filter((l) => /^h_seconds_(sum|count)/.test(l) && l.includes("#"))).toEqual([]);
    const marked = lines.filter((l) => l.includes(" # {"));
    expect(marked).toHaveLength(5);
    for (const l of marked) expect(l, l).toMatch(EXEMPLAR);
    // The rest is valid OpenMetrics, `# EOF` last and once.
    expect(openMetricsProblems(withoutExemplars(text))).toEqual([]);
    expect(text.indexOf("# EOF")).toBe(text.length - "# EOF\n".length);
  });

  it("escapes exemplar label values as label values", async () => {
    const { on } = observeBoth({ sandbox_id: 'a"b\\c\nd', module: "m" });
    const text = await registryAsOpenMetrics(on.registry);
    expect(text).toContain(' # {sandbox_id="a\\"b\\\\c\\nd",module="m"} 0.05 ');
    for (const l of text.split("\n").filter((x) => x.includes(" # {"))) expect(l).toMatch(EXEMPLAR);
  });

  it("leaves the 0.0.4 text byte for byte as it is without exemplars", async () => {
    const { on, off } = observeBoth({ sandbox_id: "sbx-1", module: "default" });
    const text = await on.registry.metrics();
    expect(text).toBe(await off.registry.metrics());
    expect(text).not.toContain("sbx-1");
    // And OpenMetrics differs only by the exemplars appended to sample lines.
    const om = await registryAsOpenMetrics(on.registry);
    expect(om).not.toBe(await registryAsOpenMetrics(off.registry));
    expect(withoutExemplars(om)).toBe(await registryAsOpenMetrics(off.registry));
  });

  it("writes no exemplar for observations made without exemplar labels", async () => {
    const { on } = observeBoth({});
    expect(await registryAsOpenMetrics(on.registry)).not.toContain(" # {");
  });
});
