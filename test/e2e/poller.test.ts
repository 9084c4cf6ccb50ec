import { spawnSync } from "node:child_process";
import { get } from "node:http";
import { gunzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { sandboxUsage } from "../../src/simulator/usage.js";
import { exporterFor, samples, scrape } from "../helpers/exporter.js";

let sim: Simulator | undefined;
const exporters: Exporter[] = [];

async function setup(
  sandboxes: number,
  argv: string[] = [],
  listOrder: "id" | "started" = "id",
): Promise<{ sim: Simulator; e: Exporter }> {
  sim = await startSimulator({ sandboxes, templates: 5, nodes: 3, pageSizeCap: 100, listOrder });
  const e = await exporterFor(sim, argv);
  exporters.push(e);
  return { sim, e };
}

afterEach(async () => {
  await Promise.all(exporters.splice(0).map((e) => e.stop()));
  await sim?.close();
  sim = undefined;
});

describe("poller and /metrics against the simulator", () => {
  // Per-sandbox series off keeps the compact table; on keeps whole records: both must agree.
  // Pages in id order, and newest first as E2B pages (the table then sorts the walk).
  it.each([
    ["the compact table", "id", []],
    ["whole records", "id", ["--per-sandbox-metrics"]],
    ["the compact table", "started", []],
    ["whole records", "started", ["--per-sandbox-metrics"]],
  ] as const)(
    "matches the simulator's ground truth per state x template at 10,000 sandboxes over 100 pages, with %s, in %s order",
    async (_, order, extra) => {
      const { sim, e } = await setup(10_000, ["--page-limit", "100", ...extra], order);
      const snap = await e.runCycle();
      expect(snap?.collectors.sandboxes.requests).toBe(100);
      expect(sim.counters.get("GET /v2/sandboxes")).toBe(100);
      const m = samples(await scrape(e));
      const truth = sim.state.groundTruth();
      expect(truth.length).toBeGreaterThan(5);
      let total = 0;
      for (const row of truth) {
        const l = `{state="${row.state}",template="${row.templateId}"}`;
        expect(m.get(`sandbox_sandboxes${l}`), l).toBe(row.count);
        expect(m.get(`sandbox_sandboxes_cpus${l}`), l).toBe(row.cpuSum);
        expect(m.get(`sandbox_sandboxes_memory_bytes${l}`), l).toBe(row.memoryBytesSum);
        expect(m.get(`sandbox_sandboxes_oldest_start_time_seconds${l}`), l).toBe(
          row.oldestStartSeconds,
        );
        total += row.count;
      }
      expect(total).toBe(10_000);
      expect([...m.keys()].filter((k) => k.startsWith("sandbox_sandboxes{"))).toHaveLength(
        truth.length,
      );
    },
  );

  it("exports the running sandboxes' usage with --poll-usage, and reports the collector in /status", async () => {
    const { sim, e } = await setup(300, ["--poll-usage"]);
    await e.runCycle();
    const m = samples(await scrape(e));
    // Independently of the exporter: the simulator's own model, summed over the running ones.
    let cpus = 0;
    let reported = 0;
    for (const s of sim.state.sandboxes.values()) {
      if (s.state !== "running") continue;
      const u = sandboxUsage(s);
      cpus += (u.cpuUsedPct / 100) * u.cpuCount;
      reported++;
    }
    const sum = (name: string) =>
      [...m].filter(([k]) => k.startsWith(`${name}{`)).reduce((a, [, v]) => a + v, 0);
    expect(sum("sandbox_sandboxes_usage_reported")).toBe(reported);
    expect(sum("sandbox_sandboxes_cpu_used")).toBeCloseTo(cpus, 6);
    expect(sim.counters.get("GET /sandboxes/metrics")).toBe(Math.ceil(reported / 100));
    const status = (await (await fetch(`${e.server.url}/status`)).json()) as {
      collectors: Record<string, { success: boolean }>;
    };
    expect(status.collectors.usage?.success).toBe(true);
  });

  it("reads no usage without --poll-usage", async () => {
    const { sim, e } = await setup(50);
    await e.runCycle();
    expect(sim.counters.get("GET /sandboxes/metrics") ?? 0).toBe(0);
    expect(await scrape(e)).not.toContain("sandbox_sandboxes_cpu_used");
  });

  it("answers scrapes from the cached snapshot without calling the platform", async () => {
    const { sim, e } = await setup(500);
    await e.runCycle();
    sim.counters.reset();
    for (let i = 0; i < 5; i++) await scrape(e);
    await scrape(e, "application/openmetrics-text; version=1.0.0");
    expect(sim.counters.total()).toBe(0);
  });

  it("marks node series stale when /nodes fails while sandboxes and templates stay fresh", async () => {
    const { sim, e } = await setup(300);
    await e.runCycle();
    const nodeId = sim.state.nodes[0]!.nodeID;
    sim.faults.route("GET /nodes", { status: 500 });
    await e.runCycle();
    const m = samples(await scrape(e));
    expect(m.get('sandbox_exporter_collect_success{collector="nodes"}')).toBe(0);
    expect(m.get('sandbox_exporter_collect_stale{collector="nodes"}')).toBe(1);
    expect(m.get('sandbox_exporter_collect_success{collector="sandboxes"}')).toBe(1);
    expect(m.get('sandbox_exporter_collect_stale{collector="templates"}')).toBe(0);
    expect(m.get(`sandbox_node_status{node="${nodeId}",status="ready"}`)).toBeDefined();
    const status = (await (await fetch(`${e.server.url}/status`)).json()) as {
      collectors: Record<
        string,
        { success: boolean; stale: boolean; error: { code: string } | null }
      >;
    };
    expect(status.collectors.nodes).toMatchObject({
      success: false,
      stale: true,
      error: { code: "ERR_PLATFORM_HTTP" },
    });
    expect(status.collectors.sandboxes).toMatchObject({ success: true, stale: false, error: null });
  });

  it("ends the walk when the next token repeats, with an error metric and no hang", async () => {
    const { sim, e } = await setup(1_000);
    sim.faults.repeatNextToken = true;
    const snap = await e.runCycle();
    expect(snap?.collectors.sandboxes.error?.code).toBe("ERR_PAGING_REPEATED_TOKEN");
    expect(sim.counters.get("GET /v2/sandboxes")).toBeLessThanOrEqual(3);
    const m = samples(await scrape(e));
    expect(m.get('sandbox_exporter_collect_success{collector="sandboxes"}')).toBe(0);
    expect(snap?.sandboxesComplete).toBe(false);
  });

  it("produces output that promtool check metrics accepts, per-sandbox series off and on", async () => {
    const { e } = await setup(400, ["--per-sandbox-metrics", "--metadata-labels", "team,env"]);
    await e.runCycle();
    const off = await exporterFor(sim!);
    exporters.push(off);
    await off.runCycle();
    for (const text of [await scrape(e), await scrape(off)]) {
      const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
      expect(r.error).toBeUndefined();
      expect(`${r.stdout}${r.stderr}`).toBe("");
      expect(r.status).toBe(0);
    }
  });

  it("partitions per-sandbox series exactly across two shards", async () => {
    const { sim } = await setup(2_000);
    const shards = await Promise.all(
      [0, 1].map((i) =>
        exporterFor(sim, [
          "--per-sandbox-metrics",
          "--max-sandbox-series",
          "100000",
          "--shard",
          String(i),
          "--total-shards",
          "2",
        ]),
      ),
    );
    exporters.push(...shards);
    const ids = await Promise.all(
      shards.map(async (e) => {
        await e.runCycle();
        const text = await scrape(e);
        return new Set(
          [...text.matchAll(/^sandbox_sandbox_info\{sandbox_id="([^"]+)"/gm)].map((m) => m[1]),
        );
      }),
    );
    const [a, b] = ids as [Set<string>, Set<string>];
    expect(a.size).toBeGreaterThan(0);
    expect(b.size).toBeGreaterThan(0);
    expect([...a].filter((id) => b.has(id))).toEqual([]);
    expect(new Set([...a, ...b])).toEqual(new Set(sim.state.sortedIds()));
    const text1 = await scrape(shards[1]!);
    expect(text1).not.toContain("sandbox_node_status");
    expect(text1).toMatch(/sandbox_sandboxes\{state="[^"]+",template="[^"]+",shard="1"\}/);
  });

  it.each(["id", "started"] as const)(
    "counts sandboxes created and gone between complete walks, in %s order",
    async (order) => {
      const { sim, e } = await setup(200, [], order);
      await e.runCycle();
      const victim = sim.state.sortedIds()[0]!;
      const tpl = sim.state.sandbox(victim)!.templateID;
      sim.state.removeSandbox(victim);
      const added = sim.state.addSandbox({ templateID: tpl });
      await e.runCycle();
      const m = samples(await scrape(e));
      // Removed before its end time: an early end.
      expect(m.get(`sandbox_sandboxes_disappeared_total{template="${tpl}",reason="early"}`)).toBe(
        1,
      );
      expect(m.get(`sandbox_sandboxes_created_total{template="${added.templateID}"}`)).toBe(1);
    },
  );

  it("serves gzip that decompresses to the plain body, reusing the cached snapshot part", async () => {
    const { e } = await setup(300, ["--per-sandbox-metrics"]);
    await e.runCycle();
    const a = await e.metrics.render("prometheus", false);
    const b = await e.metrics.render("prometheus", false);
    expect(a.body[0]).toBe(b.body[0]);
    const raw = await new Promise<Buffer>((resolve, reject) => {
      get(`${e.server.url}/metrics`, { headers: { "accept-encoding": "gzip" } }, (res) => {
        expect(res.headers["content-encoding"]).toBe("gzip");
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks)));
      }).on("error", reject);
    });
    const unzipped = gunzipSync(raw).toString("utf8");
    const plain = Buffer.concat(a.body).toString("utf8");
    const strip = (t: string) =>
      t
        .split("\n")
        .filter((l) => l.startsWith("sandbox_sandbox"))
        .join("\n");
    expect(strip(unzipped)).toBe(strip(plain));
    expect(strip(plain).length).toBeGreaterThan(1000);
  });

  it("reads node and template details when configured, merging them over the list summaries", async () => {
    const { sim, e } = await setup(50, ["--node-details", "--template-details"]);
    const snap = await e.runCycle();
    expect(sim.counters.get("GET /nodes/{id}")).toBe(3);
    expect(sim.counters.get("GET /templates/{id}")).toBe(5);
    expect(snap?.collectors.nodes.requests).toBe(4);
    expect(snap?.collectors.templates.requests).toBe(6);
    const summary = await exporterFor(sim);
    exporters.push(summary);
    const plain = await summary.runCycle();
    const detailed = snap!.nodes![0]!;
    const listed = plain!.nodes!.find((n) => n.id === detailed.id)!;
    // The simulator's detail adds only nested text; the merge must keep every summary field.
    expect(detailed.numeric).toEqual(listed.numeric);
    expect(detailed.status).toBe(listed.status);
  });

  it("serves readiness only after a first cycle, and /healthz always", async () => {
    const { e } = await setup(50);
    expect((await fetch(`${e.server.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${e.server.url}/healthz`)).status).toBe(200);
    await e.runCycle();
    expect((await fetch(`${e.server.url}/readyz`)).status).toBe(200);
  });
});
