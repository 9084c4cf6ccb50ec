import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { negotiateFormat } from "../../src/metrics/exporter-metrics.js";
import { inShard } from "../../src/util/shard.js";
import {
  collectors,
  linesOf,
  metricsWith,
  sampleLines,
  sandbox,
  scrapeText,
  snapshot,
  T0,
} from "./fixtures.js";
import { small, usageStatus, usageText, withUsage } from "./scenes.js";

describe("ExporterMetrics snapshot families", () => {
  it("renders exactly these samples for a small snapshot", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true, metadataLabels: ["team"] });
    metrics.update(small());
    const text = await scrapeText(metrics);
    const snapshotPart = sampleLines(
      text.slice(0, text.indexOf("# HELP sandbox_exporter_build_info")),
    );
    expect(snapshotPart).toEqual([
      "sandbox_platform_up 1",
      'sandbox_platform_health_status{status="ok"} 1',
      "sandbox_cluster_memory_bytes 1073741824",
      "sandbox_cluster_nodes 2",
      'sandbox_node_status{node="n1",status="ready"} 1',
      'sandbox_node_cpus{node="n1"} 8',
      'sandbox_node_info{node="n1",version="1.0"} 1',
      'sandbox_template_status{template="base",status="ready"} 1',
      'sandbox_template_info{template="base",version="v2"} 1',
      'sandbox_template_replicas{template="base"} 3',
      'sandbox_template_error{template="base"} 0',
      'sandbox_template_spawns{template="base"} 7',
      'sandbox_sandboxes{state="paused",template="base"} 1',
      'sandbox_sandboxes{state="running",template="base"} 1',
      'sandbox_sandboxes_cpus{state="paused",template="base"} 4',
      'sandbox_sandboxes_cpus{state="running",template="base"} 2',
      'sandbox_sandboxes_memory_bytes{state="paused",template="base"} 268435456',
      'sandbox_sandboxes_memory_bytes{state="running",template="base"} 536870912',
      'sandbox_sandboxes_oldest_start_time_seconds{state="paused",template="base"} 1789999879.5',
      'sandbox_sandboxes_oldest_start_time_seconds{state="running",template="base"} 1789999940',
      'sandbox_sandboxes_ending_soon{state="running",template="base"} 1',
      "sandbox_exporter_sandbox_series_dropped 0",
      ...["health", "overview", "nodes", "templates", "sandboxes"].map(
        (c) => `sandbox_exporter_collect_duration_seconds{collector="${c}"} 0.25`,
      ),
      ...["health", "overview", "nodes", "templates", "sandboxes"].map(
        (c) => `sandbox_exporter_collect_success{collector="${c}"} 1`,
      ),
      ...["health", "overview", "nodes", "templates", "sandboxes"].map(
        (c) => `sandbox_exporter_last_success_timestamp_seconds{collector="${c}"} 1790000000`,
      ),
      'sandbox_exporter_collector_supported{collector="health"} 1',
      'sandbox_exporter_collector_supported{collector="overview"} 1',
      'sandbox_exporter_collector_supported{collector="nodes"} 1',
      'sandbox_exporter_collector_supported{collector="templates"} 1',
      'sandbox_exporter_collector_supported{collector="sandboxes"} 1',
      "sandbox_exporter_last_cycle_timestamp_seconds 1790000001.5",
      "sandbox_exporter_label_values_truncated 0",
      'sandbox_exporter_invalid_values{field="cpu"} 0',
      'sandbox_exporter_invalid_values{field="memory"} 0',
      'sandbox_sandbox_info{sandbox_id="a",template="base",state="running",team="ml"} 1',
      'sandbox_sandbox_info{sandbox_id="b",template="base",state="paused",team=""} 1',
      'sandbox_sandbox_start_time_seconds{sandbox_id="a"} 1789999940',
      'sandbox_sandbox_start_time_seconds{sandbox_id="b"} 1789999879.5',
      'sandbox_sandbox_end_timestamp_seconds{sandbox_id="a"} 1790000120',
      'sandbox_sandbox_cpus{sandbox_id="a"} 2',
      'sandbox_sandbox_cpus{sandbox_id="b"} 4',
      'sandbox_sandbox_memory_bytes{sandbox_id="a"} 536870912',
      'sandbox_sandbox_memory_bytes{sandbox_id="b"} 268435456',
      'sandbox_sandboxes_created_total{template="base"} 0',
      ...["early", "expired", "paused", "probe", "unknown"].map(
        (r) => `sandbox_sandboxes_disappeared_total{template="base",reason="${r}"} 0`,
      ),
    ]);
  });

  it("gives every family HELP and TYPE, and says in HELP which endpoint cached data comes from", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    metrics.update(small());
    const text = await scrapeText(metrics);
    const helps = new Map<string, string>();
    const types = new Set<string>();
    for (const line of text.split("\n")) {
      const help = /^# HELP (\S+) (.*)$/.exec(line);
      if (help) helps.set(help[1] as string, help[2] as string);
      const type = /^# TYPE (\S+) /.exec(line);
      if (type) types.add(type[1] as string);
    }
    const families = new Set(
      sampleLines(text).map((l) =>
        String(/^[^{ ]+/.exec(l)?.[0]).replace(/_(bucket|sum|count)$/, ""),
      ),
    );
    for (const f of families) {
      expect(helps.has(f), f).toBe(true);
      expect(types.has(f), f).toBe(true);
    }
    const endpointOf: Array<[RegExp, string]> = [
      [/^sandbox_platform_/, "GET /health."],
      [/^sandbox_cluster_/, "GET /cluster/overview."],
      [/^sandbox_node_/, "GET /nodes."],
      [/^sandbox_template_/, "GET /templates."],
      [/^sandbox_sandbox(es)?_/, "GET /v2/sandboxes"],
    ];
    for (const [re, endpoint] of endpointOf) {
      const names = [...helps.keys()].filter((n) => re.test(n));
      expect(names.length, String(re)).toBeGreaterThan(0);
      for (const n of names) {
        expect(helps.get(n), n).toContain(endpoint);
        if (!n.endsWith("_total"))
          expect(helps.get(n), n).toContain("Cached from the last successful");
      }
    }
  });

  it("keeps a 0 series for every status seen before (state-sets), across nodes and snapshots", async () => {
    const { metrics } = metricsWith();
    const node = (id: string, status: string) => ({ id, status, numeric: {}, info: {} });
    metrics.update(snapshot({ nodes: [node("n1", "ready"), node("n2", "draining")] }));
    metrics.update(snapshot({ cycle: 2, nodes: [node("n1", "unhealthy"), node("n2", "ready")] }));
    expect(linesOf(await scrapeText(metrics), "sandbox_node_status")).toEqual([
      'sandbox_node_status{node="n1",status="draining"} 0',
      'sandbox_node_status{node="n1",status="ready"} 0',
      'sandbox_node_status{node="n1",status="unhealthy"} 1',
      'sandbox_node_status{node="n2",status="draining"} 0',
      'sandbox_node_status{node="n2",status="ready"} 1',
      'sandbox_node_status{node="n2",status="unhealthy"} 0',
    ]);
    metrics.update(snapshot({ cycle: 3, health: { up: false, status: "degraded" } }));
    metrics.update(snapshot({ cycle: 4, health: { up: true, status: "ok" } }));
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_platform_health_status")).toEqual([
      'sandbox_platform_health_status{status="degraded"} 0',
      'sandbox_platform_health_status{status="ok"} 1',
    ]);
    expect(linesOf(text, "sandbox_platform_up")).toEqual(["sandbox_platform_up 1"]);
  });

  it("marks templates with an error and leaves the health state-set out when /health had no status", async () => {
    const { metrics } = metricsWith();
    metrics.update(
      snapshot({
        health: { up: false },
        templates: [
          { id: "t1", status: "error", error: "build failed", numeric: {}, info: {} },
          { id: "t2", status: "ready", numeric: {}, info: {} },
        ],
      }),
    );
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_template_error")).toEqual([
      'sandbox_template_error{template="t1"} 1',
      'sandbox_template_error{template="t2"} 0',
    ]);
    expect(linesOf(text, "sandbox_template_info")).toContain(
      'sandbox_template_info{template="t2",version=""} 1',
    );
    expect(text).toContain("sandbox_platform_up 0\n");
    expect(text).not.toContain("sandbox_platform_health_status");
  });

  it("labels a shard's sandboxes with its shard, and exports cluster-wide data only on shard 0", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `sb-${i}`);
    const seen: string[] = [];
    for (const index of [0, 1, 2]) {
      // What that shard's walk kept: the poller applies the shard at the list.
      const mine = ids.filter((id) => inShard(id, index, 3));
      const snap = { ...small(), sandboxes: mine.map((id) => sandbox(id)) };
      const { metrics } = metricsWith({
        perSandboxMetrics: true,
        shard: { index, total: 3 },
      });
      metrics.update(snap);
      const text = await scrapeText(metrics);
      const own = linesOf(text, "sandbox_sandbox_info").map(
        (l) => /sandbox_id="([^"]+)"/.exec(l)?.[1] as string,
      );
      expect(own.sort()).toEqual([...mine].sort());
      seen.push(...own);
      expect(linesOf(text, "sandbox_sandboxes")).toEqual([
        `sandbox_sandboxes{state="running",template="base",shard="${index}"} ${own.length}`,
      ]);
      expect(text.includes("sandbox_node_status"), `shard ${index}`).toBe(index === 0);
      expect(text.includes("sandbox_platform_up"), `shard ${index}`).toBe(index === 0);
      expect(text.includes("sandbox_template_info"), `shard ${index}`).toBe(index === 0);
    }
    expect(seen.sort()).toEqual([...ids].sort());
  });

  it("caps per-sandbox series, counts the rest and warns once", async () => {
    const { metrics, warnings } = metricsWith({ perSandboxMetrics: true, maxSandboxSeries: 3 });
    const list = Array.from({ length: 5 }, (_, i) => sandbox(`s${i}`));
    metrics.update(snapshot({ sandboxes: list }));
    metrics.update(snapshot({ cycle: 2, sandboxes: list }));
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_sandbox_info")).toHaveLength(3);
    expect(linesOf(text, "sandbox_sandbox_cpus")).toHaveLength(3);
    expect(linesOf(text, "sandbox_exporter_sandbox_series_dropped")).toEqual([
      "sandbox_exporter_sandbox_series_dropped 2",
    ]);
    expect(linesOf(text, "sandbox_sandboxes")).toContain(
      'sandbox_sandboxes{state="running",template="base"} 5',
    );
    expect(warnings.filter((w) => w.msg.includes("capped"))).toHaveLength(1);
    expect(warnings[0]?.obj).toMatchObject({ dropped: 2, maxSandboxSeries: 3 });
  });

  it("never exports metadata outside the allow-list, and renames labels that clash", async () => {
    const { metrics } = metricsWith({
      perSandboxMetrics: true,
      metadataLabels: ["team", "state", "costCenter"],
    });
    metrics.update(
      snapshot({
        sandboxes: [
          sandbox("a", {
            metadata: { team: "ml", state: "custom", costCenter: "42", apiToken: "hunter2" },
          }),
        ],
      }),
    );
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_sandbox_info")).toEqual([
      'sandbox_sandbox_info{sandbox_id="a",template="base",state="running",team="ml",metadata_state="custom",cost_center="42"} 1',
    ]);
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("api_token");
  });

  it("has no sandbox ids anywhere unless per-sandbox series are on", async () => {
    const { metrics } = metricsWith({ metadataLabels: ["team"] });
    metrics.update(small());
    const text = await scrapeText(metrics);
    expect(text).not.toContain("sandbox_id");
    expect(text).not.toContain("sandbox_exporter_sandbox_series_dropped");
  });

  it("escapes backslash, double quote and newline in label values", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true, metadataLabels: ["note"] });
    metrics.update(
      snapshot({
        nodes: [{ id: 'n"1', status: "re\\ady", numeric: {}, info: { zone: "a\nb" } }],
        sandboxes: [sandbox("x", { templateId: 'my"tpl', metadata: { note: 'C:\\dir "q"\nend' } })],
      }),
    );
    const text = await scrapeText(metrics);
    expect(text).toContain('sandbox_node_status{node="n\\"1",status="re\\\\ady"} 1\n');
    expect(text).toContain('sandbox_node_info{node="n\\"1",zone="a\\nb"} 1\n');
    expect(text).toContain(
      'sandbox_sandbox_info{sandbox_id="x",template="my\\"tpl",state="running",note="C:\\\\dir \\"q\\"\\nend"} 1\n',
    );
    expect(text).toContain('sandbox_sandboxes{state="running",template="my\\"tpl"} 1\n');
  });

  it("serves last-good data of a failed collector with stale 1, and data age from the scrape time", async () => {
    const { metrics, clock } = metricsWith();
    metrics.update(
      snapshot({
        nodes: [{ id: "n1", status: "ready", numeric: {}, info: {} }],
        collectors: collectors({
          nodes: { success: false, stale: true, lastSuccessAt: T0 - 60_000 },
          templates: { success: false, stale: true, lastSuccessAt: undefined },
          overview: { skipped: true, success: false, stale: true, lastSuccessAt: undefined },
        }),
      }),
    );
    let text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_exporter_collect_stale")).toContain(
      'sandbox_exporter_collect_stale{collector="nodes"} 1',
    );
    expect(linesOf(text, "sandbox_exporter_collect_success")).toContain(
      'sandbox_exporter_collect_success{collector="nodes"} 0',
    );
    expect(text).toContain('sandbox_node_status{node="n1",status="ready"} 1');
    expect(linesOf(text, "sandbox_exporter_data_age_seconds")).toEqual([
      'sandbox_exporter_data_age_seconds{collector="health"} 5',
      'sandbox_exporter_data_age_seconds{collector="nodes"} 65',
      'sandbox_exporter_data_age_seconds{collector="sandboxes"} 5',
    ]);
    expect(text).not.toContain('collector="overview"');
    clock.advance(30_000);
    text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_exporter_data_age_seconds")).toContain(
      'sandbox_exporter_data_age_seconds{collector="nodes"} 95',
    );
  });

  it("exports no data age before the first snapshot", async () => {
    const { metrics } = metricsWith();
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_exporter_data_age_seconds")).toEqual([]);
    expect(text).toContain('sandbox_exporter_build_info{version="1.2.3",node_version=');
  });
});

describe("ExporterMetrics scrape-time metrics", () => {
  it("labels request durations by the HTTP status, or by the error reason when there was none", async () => {
    const { metrics } = metricsWith();
    metrics.observeRequest({ endpoint: "/nodes", method: "GET", status: 200, durationMs: 12 });
    metrics.observeRequest({
      endpoint: "/nodes",
      method: "GET",
      status: 503,
      durationMs: 40,
      error: "http_5xx",
    });
    metrics.observeRequest({
      endpoint: "/v2/sandboxes",
      method: "GET",
      durationMs: 10_000,
      error: "timeout",
    });
    metrics.skippedTick();
    const text = await scrapeText(metrics);
    const h = "sandbox_exporter_api_request_duration_seconds";
    expect(text).toContain(`${h}_count{endpoint="/nodes",method="GET",code="200"} 1\n`);
    expect(text).toContain(`${h}_sum{endpoint="/nodes",method="GET",code="200"} 0.012\n`);
    expect(text).toContain(`${h}_count{endpoint="/nodes",method="GET",code="503"} 1\n`);
    expect(text).toContain(`${h}_count{endpoint="/v2/sandboxes",method="GET",code="timeout"} 1\n`);
    expect(text).toContain(
      `${h}_bucket{le="5",endpoint="/v2/sandboxes",method="GET",code="timeout"} 0\n`,
    );
    const errors = linesOf(text, "sandbox_exporter_api_errors_total");
    expect(errors.filter((l) => !l.endsWith(" 0")).sort()).toEqual([
      'sandbox_exporter_api_errors_total{endpoint="/nodes",method="GET",reason="http_5xx"} 1',
      'sandbox_exporter_api_errors_total{endpoint="/v2/sandboxes",method="GET",reason="timeout"} 1',
    ]);
    // Every reason of an endpoint asked exists at 0: a healthy endpoint's error ratio reads 0.
    expect(errors).toContain(
      'sandbox_exporter_api_errors_total{endpoint="/nodes",method="GET",reason="timeout"} 0',
    );
    expect(errors).toHaveLength(2 * 7);
    expect(text).toContain("sandbox_exporter_poll_skipped_ticks_total 1\n");
    expect(text).toContain("sandbox_exporter_poll_cycles_total 0\n");
  });

  it("includes the standard process_* series when process metrics are on", async () => {
    const { metrics } = metricsWith({ processMetrics: true });
    const text = await scrapeText(metrics);
    for (const name of [
      "process_cpu_seconds_total",
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "process_start_time_seconds",
    ])
      expect(text).toMatch(new RegExp(`^${name} \\d`, "m"));
    expect(text).not.toContain("nodejs_");
  });

  it("keeps counters named _total in the text format after an OpenMetrics scrape", async () => {
    const { metrics } = metricsWith({ processMetrics: true });
    metrics.update(small());
    await scrapeText(metrics, "openmetrics");
    const text = await scrapeText(metrics);
    expect(text).toContain("# TYPE sandbox_exporter_poll_cycles_total counter\n");
    expect(text).toContain("sandbox_exporter_poll_cycles_total 1\n");
    expect(text).toContain("# TYPE process_cpu_seconds_total counter\n");
    expect(text).toContain("# TYPE sandbox_sandboxes_created_total counter\n");
  });
});

describe("ExporterMetrics formats and caching", () => {
  it("renders OpenMetrics with counter families named without _total and # EOF at the very end", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true, processMetrics: true });
    metrics.update(small());
    metrics.observeRequest({
      endpoint: "/nodes",
      method: "GET",
      status: 500,
      durationMs: 3,
      error: "http_5xx",
    });
    const r = await metrics.render("openmetrics", false);
    expect(r.contentType).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8");
    const text = Buffer.concat(r.body).toString("utf8");
    expect(text.endsWith("\n# EOF\n")).toBe(true);
    expect(text.indexOf("# EOF")).toBe(text.length - "# EOF\n".length);
    expect(text).not.toMatch(/\n\n/);
    const counterTypes = [...text.matchAll(/^# TYPE (\S+) counter$/gm)].map((m) => m[1]);
    expect(counterTypes).toEqual(
      expect.arrayContaining([
        "sandbox_sandboxes_created",
        "sandbox_sandboxes_disappeared",
        "sandbox_exporter_api_errors",
        "sandbox_exporter_poll_cycles",
        "process_cpu_seconds",
      ]),
    );
    for (const name of counterTypes) expect(name).not.toMatch(/_total$/);
    expect(text).toContain('sandbox_sandboxes_created_total{template="base"} 0\n');
    expect(text).toContain(
      'sandbox_exporter_api_errors_total{endpoint="/nodes",method="GET",reason="http_5xx"} 1\n',
    );
    // Every sample belongs to the family declared right above it (families are not interleaved).
    let family = "";
    for (const line of text.split("\n")) {
      const t = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (t) family = t[1] as string;
      else if (line && !line.startsWith("#"))
        expect(line.startsWith(family), `${line} after ${family}`).toBe(true);
    }
  });

  it("renders the same gauge bytes in both formats and only the counters differ", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    metrics.update(small());
    const prom = await scrapeText(metrics, "prometheus");
    const om = await scrapeText(metrics, "openmetrics");
    const gaugePart = (t: string) => t.slice(0, t.indexOf("# HELP sandbox_sandboxes_created"));
    expect(gaugePart(om)).toBe(gaugePart(prom));
    expect(prom).toContain("# TYPE sandbox_sandboxes_created_total counter\n");
    expect(om).toContain("# TYPE sandbox_sandboxes_created counter\n");
  });

  it("reuses the cached snapshot Buffers across scrapes until update() is called", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    metrics.update(small());
    const a = await metrics.render("prometheus", false);
    const b = await metrics.render("prometheus", false);
    const c = await metrics.render("openmetrics", false);
    expect(a.body.length).toBeGreaterThan(2);
    for (let i = 0; i < a.body.length - 1; i++) {
      expect(b.body[i]).toBe(a.body[i]);
      expect(c.body[i]).toBe(a.body[i]);
    }
    metrics.update({ ...small(), cycle: 2 });
    const d = await metrics.render("prometheus", false);
    expect(d.body[0]).not.toBe(a.body[0]);
  });

  it("serves gzip that decompresses to the plain body, compressing the snapshot part once", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    metrics.update(small());
    const plain = await metrics.render("prometheus", false);
    const zipped = await metrics.render("prometheus", true);
    const again = await metrics.render("prometheus", true);
    expect(zipped.contentEncoding).toBe("gzip");
    expect(plain.contentEncoding).toBeUndefined();
    expect(gunzipSync(Buffer.concat(zipped.body)).toString("utf8")).toBe(
      Buffer.concat(plain.body).toString("utf8"),
    );
    expect(again.body[0]).toBe(zipped.body[0]);
    const om = await metrics.render("openmetrics", true);
    expect(gunzipSync(Buffer.concat(om.body)).toString("utf8")).toBe(
      await scrapeText(metrics, "openmetrics"),
    );
  });

  it("serves a valid gzip body before the first snapshot too", async () => {
    const { metrics } = metricsWith();
    const zipped = await metrics.render("prometheus", true);
    expect(gunzipSync(Buffer.concat(zipped.body)).toString("utf8")).toBe(await scrapeText(metrics));
  });

  it("negotiates OpenMetrics only when the Accept header prefers it", () => {
    expect(negotiateFormat(undefined)).toBe("prometheus");
    expect(negotiateFormat("*/*")).toBe("prometheus");
    expect(negotiateFormat("text/plain;version=0.0.4")).toBe("prometheus");
    expect(
      negotiateFormat(
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
      ),
    ).toBe("openmetrics");
    expect(negotiateFormat("application/openmetrics-text; version=1.0.0")).toBe("openmetrics");
    expect(negotiateFormat("text/plain;q=1, application/openmetrics-text;q=0.5")).toBe(
      "prometheus",
    );
    expect(negotiateFormat("application/openmetrics-text;q=0, text/plain")).toBe("prometheus");
  });
});

describe("an unsupported collector", () => {
  it("reads supported 0 and exports no success, stale or duration series", async () => {
    const { metrics } = metricsWith();
    metrics.update(
      snapshot({
        collectors: collectors({ overview: { unsupported: true, success: false, stale: false } }),
      }),
    );
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_exporter_collector_supported")).toContain(
      'sandbox_exporter_collector_supported{collector="overview"} 0',
    );
    for (const family of [
      "sandbox_exporter_collect_success",
      "sandbox_exporter_collect_stale",
      "sandbox_exporter_collect_duration_seconds",
    ])
      expect(linesOf(text, family).filter((l) => l.includes('"overview"'))).toEqual([]);
  });
});

describe("the usage collector", () => {
  it("exports its collector series, data age, usage families and usage guard fields", async () => {
    const text = await usageText();
    for (const [family, value] of [
      ["sandbox_exporter_collector_supported", "1"],
      ["sandbox_exporter_collect_success", "1"],
      ["sandbox_exporter_collect_stale", "0"],
      ["sandbox_exporter_collect_duration_seconds", "0.5"],
      ["sandbox_exporter_last_success_timestamp_seconds", "1790000000"],
      ["sandbox_exporter_data_age_seconds", "5"],
    ] as const)
      expect(linesOf(text, family)).toContain(`${family}{collector="usage"} ${value}`);
    expect(linesOf(text, "sandbox_sandboxes_cpu_used")).toEqual([
      'sandbox_sandboxes_cpu_used{state="running",template="base"} 1',
    ]);
    expect(linesOf(text, "sandbox_sandboxes_usage_reported")).toEqual([
      'sandbox_sandboxes_usage_reported{state="paused",template="base"} 0',
      'sandbox_sandboxes_usage_reported{state="running",template="base"} 1',
    ]);
    expect(linesOf(text, "sandbox_sandbox_cpu_used_ratio")).toEqual([
      'sandbox_sandbox_cpu_used_ratio{sandbox_id="a"} 0.5',
    ]);
    expect(linesOf(text, "sandbox_exporter_invalid_values")).toEqual(
      ["cpu", "memory", "cpu_used", "memory_used", "disk_used"].map(
        (f) => `sandbox_exporter_invalid_values{field="${f}"} 0`,
      ),
    );
    for (const line of text.split("\n").filter((l) => /^# HELP \S+_(used|usage)_?/.test(l)))
      expect(line).toContain("GET /sandboxes/metrics");
  });

  it("reads supported 0 when unsupported, and then exports no usage family", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    metrics.update(
      withUsage({
        samples: new Map(),
        status: usageStatus({ success: false, unsupported: true, lastSuccessAt: undefined }),
      }),
    );
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_exporter_collector_supported")).toContain(
      'sandbox_exporter_collector_supported{collector="usage"} 0',
    );
    expect(text).not.toMatch(/collect_(success|stale)\{collector="usage"\}/);
    expect(text).not.toMatch(/_used|usage_reported|field="cpu_used"/);
  });
});
