import { Counter, Gauge, Histogram, Registry, Summary } from "prom-client";
import { describe, expect, it } from "vitest";
import { registryAsOpenMetrics } from "../../src/exposition/openmetrics.js";
import {
  escapeHelp,
  escapeLabel,
  Family,
  formatValue,
  header,
  labels,
} from "../../src/exposition/text.js";
import { openMetricsProblems } from "../metrics/fixtures.js";

describe("exposition text", () => {
  it("formats values as Prometheus parses them, integers never in exponent form", () => {
    expect(formatValue(0)).toBe("0");
    expect(formatValue(-0)).toBe("0");
    expect(formatValue(1.5)).toBe("1.5");
    expect(formatValue(536_870_912)).toBe("536870912");
    expect(formatValue(2 ** 70)).toBe("1180591620717411303424");
    expect(formatValue(Number.NaN)).toBe("NaN");
    expect(formatValue(Number.POSITIVE_INFINITY)).toBe("+Inf");
    expect(formatValue(Number.NEGATIVE_INFINITY)).toBe("-Inf");
  });

  it("escapes label values and HELP text", () => {
    expect(escapeLabel('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeLabel("plain")).toBe("plain");
    expect(
      labels([
        ["a", "1"],
        ["b", '"'],
      ]),
    ).toBe('{a="1",b="\\""}');
    expect(labels([])).toBe("");
    expect(escapeHelp('x\\y\n"z"')).toBe("x\\\\y\\n'z'");
  });

  it("names counter families with _total in the text format and without in OpenMetrics", () => {
    expect(header("x", "counter", "h", "prometheus")).toBe(
      "# HELP x_total h\n# TYPE x_total counter\n",
    );
    expect(header("x", "counter", "h", "openmetrics")).toBe("# HELP x h\n# TYPE x counter\n");
    const f = new Family("x", "counter", "h").add('{a="1"}', 2);
    expect(f.render("openmetrics")).toBe('# HELP x h\n# TYPE x counter\nx_total{a="1"} 2\n');
    expect(new Family("y", "gauge", "h").render("prometheus")).toBe("");
  });

  it("leaves out a counter sample that is not finite and counts it; a gauge keeps NaN", () => {
    const c = new Family("c", "counter", "h").add('{a="1"}', Number.POSITIVE_INFINITY).add("", 2);
    expect(c.render("prometheus")).toBe("# HELP c_total h\n# TYPE c_total counter\nc_total 2\n");
    expect(c.nonFinite).toBe(1);
    expect(new Family("g", "gauge", "h").add("", Number.NaN).render("prometheus")).toContain(
      "g NaN",
    );
  });
});

describe("registryAsOpenMetrics", () => {
  it("writes every prom-client metric type as valid OpenMetrics without renaming the registry's metrics", async () => {
    const registry = new Registry();
    const registers = [registry];
    new Counter({ name: "c_total", help: "a counter", labelNames: ["x"], registers }).inc(
      { x: 'q"' },
      2,
    );
    new Gauge({ name: "g", help: "a gauge", registers }).set(1.5);
    new Histogram({ name: "h_seconds", help: "h", buckets: [0.1, 1], registers }).observe(0.5);
    new Summary({ name: "s", help: "s", percentiles: [0.5], registers }).observe(3);
    const text = `${await registryAsOpenMetrics(registry)}# EOF\n`;
    expect(openMetricsProblems(text)).toEqual([]);
    expect(text).toContain('# TYPE c counter\nc_total{x="q\\""} 2\n');
    expect(text).toContain(
      'h_seconds_bucket{le="0.1"} 0\nh_seconds_bucket{le="1"} 1\nh_seconds_bucket{le="+Inf"} 1\n',
    );
    expect(text).toContain('s{quantile="0.5"} 3\n');
    expect(await registry.metrics()).toContain('# TYPE c_total counter\nc_total{x="q\\""} 2');
  });
});
