// The exposition of hostile platform data, read by promtool (text format) and by our OpenMetrics
// checker (promtool reads only the text format).
import { beforeAll, describe, expect, it } from "vitest";
import type { Snapshot } from "../../src/collect/snapshot.js";
import { promtool, promtoolReady } from "../helpers/promtool.js";
import {
  metricsWith,
  openMetricsProblems,
  sandbox,
  scrapeText,
  snapshot,
  T0,
} from "../metrics/fixtures.js";

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
}, 90_000);

/** Platform data with every naming hazard we know of: units, reserved suffixes, clashes, odd keys. */
function hostile(): Snapshot {
  return snapshot({
    health: { up: true, status: "ok" },
    overview: {
      numeric: {
        node_count: 3,
        nodes: 3,
        memory_mb: 2048,
        memory_bytes: 2_147_483_648,
        cpu_total: 96,
        uptime_ms: 1500,
        latency_us: 20,
        request_counter: 5,
        build_info: 1,
        sum: 4,
        count: 9,
        "": 1,
        "9lives": 9,
        __private: 1,
        allocated_cp_us: 12,
        running_v_ms: 3,
        disk_size_gib: 1,
        bandwidth_bits: 800,
        ttl_h: 2,
        quota_bucket: 1,
      },
    },
    nodes: [
      {
        id: "n1",
        status: "ready",
        numeric: { status: 1, info: 2, cpu_count: 8, cpus: 8, sandbox_starting_count: 1 },
        info: { node: "dup", le: "x", quantile: "y", teamName: "a", team_name: "b", __meta: "m" },
      },
      { id: "n1", status: "ready", numeric: {}, info: {} },
      { id: "n2", status: "cordoned", numeric: { memory_total_bytes: 1 }, info: {} },
    ],
    templates: [
      {
        id: "t",
        status: "ready",
        replicas: 2,
        numeric: { replicas: 2, error: 1, spawn_count: 4, build_count: 1 },
        info: {},
      },
    ],
    sandboxes: [
      sandbox("a", { metadata: { team: "x", le: "1", "team-name": "y" } }),
      sandbox("a", { state: "paused" }),
      sandbox("b", { templateId: "", state: "unknown", cpuCount: undefined, memoryMB: undefined }),
      sandbox("c", { startedAt: undefined, templateId: "t\u00e9\u{1F600}" }),
      sandbox("d", { memoryMB: 0.5, startedAt: T0 + 0.25 }),
    ],
  });
}

describe("exposition validity", () => {
  for (const [name, perSandbox] of [
    ["per-sandbox series off", false],
    ["per-sandbox series on", true],
  ] as const) {
    for (const format of ["prometheus", "openmetrics"] as const) {
      it(`produces valid ${format} output with ${name}, for hostile platform data`, async () => {
        const { metrics } = metricsWith({
          perSandboxMetrics: perSandbox,
          metadataLabels: ["team", "le", "team-name", "team_name", "quantile"],
          processMetrics: true,
        });
        metrics.update(hostile());
        metrics.update({ ...hostile(), cycle: 2 });
        metrics.observeRequest({ endpoint: "/nodes", method: "GET", status: 200, durationMs: 5 });
        metrics.observeRequest({
          endpoint: "/nodes",
          method: "GET",
          durationMs: 5,
          error: "timeout",
        });
        // Render OpenMetrics first: prom-client's own OpenMetrics rendering broke later text scrapes.
        const om = await scrapeText(metrics, "openmetrics");
        const text = format === "prometheus" ? await scrapeText(metrics) : om;
        expect(text).toContain(perSandbox ? "sandbox_sandbox_info{" : "sandbox_sandboxes{");
        if (format === "openmetrics") {
          expect(openMetricsProblems(text)).toEqual([]);
          return;
        }
        const r = promtool(text);
        expect(r.output).toBe("");
        expect(r.status).toBe(0);
      });
    }
  }

  it("has checkers that reject broken bodies (so the checks above can fail)", () => {
    expect(promtool("# TYPE x gauge\nx 1\nx 1\nx_total{ 2\n").status).not.toBe(0);
    expect(promtool("# HELP x_count h\n# TYPE x_count gauge\nx_count 1\n").status).not.toBe(0);
    expect(openMetricsProblems("# HELP x h\n# TYPE x counter\nx 1\n")).toEqual([
      "does not end with # EOF",
      "sample x does not belong to counter x",
    ]);
    expect(openMetricsProblems('# HELP x h\n# TYPE x gauge\nx{a="1"} 1\n\n# EOF\n')).toEqual([
      'unexpected line: ""',
    ]);
  });
});
