// The rule for values that do not parse: an optional field is dropped from its record and
// counted; only a record that cannot be tracked (not an object, no id) is left out, and counted.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { fieldMetric } from "../../../src/exposition/naming.js";
import { registerInvalidValueMetrics } from "../../../src/metrics/self-metrics.js";
import {
  deferList,
  InvalidValues,
  Normalizer,
  normalizeList,
  normalizeLogEntry,
  normalizeNode,
  normalizeOverview,
  normalizeSandbox,
  normalizeTemplate,
} from "../../../src/platform/normalize/normalize.js";
import { MAX_TIME_MS } from "../../../src/platform/normalize/values.js";
import type { PlatformNode, Sandbox } from "../../../src/platform/types.js";
import { renderNode } from "../../../src/simulator/render.js";

const END = "2026-03-01T11:00:00Z";
const GOOD = {
  sandboxID: "sb-1",
  templateID: "base",
  state: "running",
  cpuCount: 2,
  memoryMB: 512,
  startedAt: "2026-03-01T10:00:00Z",
  endAt: END,
  metadata: { team: "ml" },
};

const slimItem = (n: Normalizer) => (raw: unknown, p: string) => normalizeSandbox(n, raw, p, true);
const fullItem = (n: Normalizer) => (raw: unknown, p: string) => normalizeSandbox(n, raw, p);

/** 200 sandboxes, the one at `at` carrying `endAt`. */
function fleet(endAt: unknown, at = 137): Array<Record<string, unknown>> {
  return Array.from({ length: 200 }, (_, i) => ({
    ...GOOD,
    sandboxID: `sb-${i}`,
    ...(i === at ? { endAt } : {}),
  }));
}

describe("an optional value that does not parse", () => {
  it.each([
    ["not a date"],
    ["2026-13-45T99:99:99Z"],
    ["+275760-09-13T00:00:01Z"],
    [""],
    ["10000-01-01T00:00:00Z"],
    [1e308],
    ["0x65F0A000"],
    [{ at: END }],
    [true],
  ])("endAt %j: the record stays, without an end time, and end_at is counted once", (bad) => {
    for (const read of [slimItem, fullItem]) {
      const n = new Normalizer();
      const items = deferList(n, fleet(bad), {}, read(n)).items();
      expect(items).toHaveLength(200);
      expect(items[137]).toMatchObject({ id: "sb-137", state: "running", cpuCount: 2 });
      expect(items[137]?.endAt).toBeUndefined();
      expect(items[136]?.endAt).toBe(Date.parse(END));
      expect(n.invalid.entries()).toEqual([{ resource: "sandbox", field: "end_at", count: 1 }]);
    }
  });

  it("is dropped and counted for every optional field of a sandbox, the rest of the record kept", () => {
    const n = new Normalizer();
    const sb = normalizeSandbox(n, {
      sandboxID: "sb-1",
      templateID: { name: "base" },
      state: ["running"],
      cpuCount: 1e308,
      memoryMB: "0x10",
      startedAt: "yesterday",
      endAt: END,
      domain: { host: "x" },
      metadata: 42,
    });
    expect(sb).toEqual({
      id: "sb-1",
      templateId: "",
      state: "unknown",
      endAt: Date.parse(END),
      metadata: {},
      extra: {},
    });
    expect(n.invalid.entries().map((c) => c.field)).toEqual([
      "template_id",
      "state",
      "cpu_count",
      "memory_mb",
      "started_at",
      "domain",
      "metadata",
    ]);
  });

  it("reads decimal text with an exponent, and no other notation, as a number", () => {
    const n = new Normalizer();
    const read = (cpuCount: unknown) => normalizeSandbox(n, { id: "a", cpuCount }).cpuCount;
    expect(read("1e1")).toBe(10);
    expect(read(" 2.5 ")).toBe(2.5);
    expect(read("500m")).toBe(0.5);
    for (const bad of ["0x10", "0o7", "0b1", "Infinity", "-Infinity", "NaN", "1e999", "1_000"]) {
      expect(read(bad), bad).toBeUndefined();
    }
    expect(n.invalid.get("sandbox", "cpu_count")).toBe(8);
  });

  it("keeps negative cpu and memory for the invalid_values gauge downstream, drops absurd ones", () => {
    const n = new Normalizer();
    expect(normalizeSandbox(n, { id: "a", cpuCount: -2, memoryMB: -1 })).toMatchObject({
      cpuCount: -2,
      memoryMB: -1,
    });
    expect(normalizeSandbox(n, { id: "a", cpuCount: -1e307, memoryMB: 1e13 })).toMatchObject({
      cpuCount: undefined,
      memoryMB: undefined,
    });
    expect(n.invalid.entries().map((c) => c.field)).toEqual(["cpu_count", "memory_mb"]);
  });

  it("drops a template's bad status, version and replicas, and counts each", () => {
    const n = new Normalizer();
    const t = normalizeTemplate(n, {
      templateID: "t",
      status: { phase: "ready" },
      version: ["1"],
      replicas: "0x10",
    });
    expect(t).toMatchObject({ id: "t", status: "unknown", version: undefined });
    expect(t.replicas).toBeUndefined();
    expect(normalizeTemplate(n, { templateID: "t", replicas: -1 }).replicas).toBeUndefined();
    expect(normalizeTemplate(n, { templateID: "t", replicas: "16" }).replicas).toBe(16);
    expect(n.invalid.entries()).toEqual([
      { resource: "template", field: "status", count: 1 },
      { resource: "template", field: "version", count: 1 },
      { resource: "template", field: "replicas", count: 2 },
    ]);
  });

  it("leaves an absurd generic number of a node or template out of its numeric fields", () => {
    const n = new Normalizer();
    const node = normalizeNode(n, {
      id: "n1",
      sandboxCount: 1e308,
      createFails: 2,
      lastHeartbeatAt: 1e300,
      metrics: { cpuPercent: -1e200, cpuCount: 32 },
    });
    expect(node.numeric).toEqual({ create_fails: 2, cpu_count: 32 });
    expect(n.invalid.entries().map((c) => `${c.resource}.${c.field}`)).toEqual([
      "node.sandbox_count",
      "node.last_heartbeat_at",
      "node.cpu_percent",
    ]);
    const t = normalizeTemplate(n, { templateID: "t", diskSizeMB: 1e308, spawnCount: 3 });
    expect(t.numeric).toEqual({ spawn_count: 3 });
    expect(n.invalid.get("template", "disk_size_mb")).toBe(1);
  });

  it("counts a number of the overview in another notation instead of reading it", () => {
    const n = new Normalizer();
    const o = normalizeOverview(n, {
      sandboxCount: "0x10",
      nodeCount: "Infinity",
      cpuTotal: "1e3",
      memoryTotalBytes: 1e308,
      region: "eu",
    });
    expect(o.numeric).toEqual({ cpu_total: 1000 });
    expect(n.invalid.entries().map((c) => c.field)).toEqual([
      "sandbox_count",
      "node_count",
      "memory_total_bytes",
    ]);
  });

  it("keeps a log entry whose time does not parse, without the time", () => {
    const n = new Normalizer();
    const page = normalizeList(
      n,
      { logs: [{ timestamp: "not a date", message: "a" }, "garbage", { time: 1e308, line: "b" }] },
      {},
      (raw, p) => normalizeLogEntry(n, raw, p),
    );
    expect(page.items.map((e) => [e.timestamp, e.message])).toEqual([
      [undefined, "a"],
      [undefined, "b"],
    ]);
    expect(n.invalid.entries()).toEqual([
      { resource: "log", field: "timestamp", count: 2 },
      { resource: "log", field: "record", count: 1 },
    ]);
  });
});

describe("a record that cannot be tracked", () => {
  it("is left out of its page and counted: no id under field id, not an object under record", () => {
    const n = new Normalizer();
    const body = { sandboxes: [GOOD, { ...GOOD, sandboxID: "" }, "sb-2", null, [GOOD]] };
    const page = deferList(n, body, {}, fullItem(n));
    expect(page.size).toBe(5);
    expect(page.items().map((s) => s.id)).toEqual(["sb-1"]);
    expect(n.invalid.entries()).toEqual([
      { resource: "sandbox", field: "id", count: 1 },
      { resource: "sandbox", field: "record", count: 3 },
    ]);
    const nodes = normalizeList(n, [{ status: "ready" }, 7, { id: "n1" }], {}, (raw, p) =>
      normalizeNode(n, raw, p),
    );
    expect(nodes.items.map((x) => x.id)).toEqual(["n1"]);
    expect(n.invalid.get("node", "id")).toBe(1);
    expect(n.invalid.get("node", "record")).toBe(1);
  });

  it("still fails a read of that one record, and a page that holds no record at all", () => {
    const n = new Normalizer();
    expect(() => normalizeSandbox(n, { state: "running" }, "sandbox")).toThrow(/sandbox id/);
    expect(() => normalizeNode(n, "n1", "node")).toThrow(/a node object/);
    expect(() => deferList(n, "<html>", {}, fullItem(n))).toThrow(/expected a list/);
    expect(() => deferList(n, { sandboxes: null }, {}, fullItem(n))).toThrow(/an array/);
    // A page without a single object is no list of records: read as empty, it would empty the fleet.
    for (const body of [[[[[]]]], ["sb-1", "sb-2"], [null]]) {
      expect(() => deferList(n, body, {}, fullItem(n)).items()).toThrow(/a sandbox object/);
    }
    expect(n.invalid.entries()).toEqual([]);
  });
});

describe("any value in any optional field (property)", () => {
  const hostile = fc.oneof(
    fc.jsonValue(),
    fc.constantFrom("", "not a date", "2026-13-45T99:99:99Z", "+275760-09-13T00:00:01Z", "0x10"),
    fc.constantFrom(1e308, -1e308, Number.MAX_VALUE, 1e21, -0, 0.5),
    fc.double({ noNaN: true }),
  );
  const record = fc.record(
    {
      templateID: hostile,
      state: hostile,
      cpuCount: hostile,
      memoryMB: hostile,
      startedAt: hostile,
      endAt: hostile,
      domain: hostile,
      metadata: hostile,
      diskSizeMB: hostile,
      lifecycle: hostile,
    },
    { requiredKeys: [] },
  );

  it("never fails a page, keeps every record with an id, and keeps only values in range", () => {
    fc.assert(
      fc.property(fc.array(record, { maxLength: 20 }), fc.boolean(), (rows, slim) => {
        const n = new Normalizer();
        const body = rows.map((r, i) => ({ ...r, sandboxID: `sb-${i}` }));
        const items = deferList(n, body, {}, slim ? slimItem(n) : fullItem(n)).items();
        expect(items.map((s) => s.id)).toEqual(body.map((r) => r.sandboxID));
        for (const s of items) expectInRange(s);
        expect(n.invalid.get("sandbox", "id")).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it("leaves out exactly the records without an id, and counts each once", () => {
    const id = fc.oneof(fc.constant(undefined), fc.constant(""), fc.string({ minLength: 1 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(id, record), { maxLength: 20 }), (rows) => {
        const n = new Normalizer();
        const body = rows.map(([sid, r]) => (sid === undefined ? r : { ...r, sandboxID: sid }));
        const items = deferList(n, body, {}, fullItem(n)).items();
        const tracked = rows.filter(([sid]) => typeof sid === "string" && sid !== "");
        expect(items.map((s) => s.id)).toEqual(tracked.map(([sid]) => sid));
        expect(n.invalid.get("sandbox", "id")).toBe(rows.length - tracked.length);
      }),
      { numRuns: 200 },
    );
  });
});

function expectInRange(s: Sandbox): void {
  for (const t of [s.startedAt, s.endAt]) {
    if (t !== undefined) expect(t > 0 && t <= MAX_TIME_MS, String(t)).toBe(true);
  }
  for (const v of [s.cpuCount, s.memoryMB]) {
    if (v !== undefined) expect(Number.isFinite(v) && Math.abs(v) <= 1e12, String(v)).toBe(true);
  }
  for (const v of Object.values(s.extra)) expect(Math.abs(v) <= 1e20, String(v)).toBe(true);
}

describe("E2B's node fields", () => {
  const e2b = JSON.parse(
    readFileSync(new URL("../../fixtures/platform/nodes-e2b.json", import.meta.url), "utf8"),
  ) as { body: unknown[] };
  const metricNames = (node: PlatformNode) =>
    new Set(Object.keys(node.numeric).map((f) => fieldMetric(f)?.suffix));

  it("give the metric names the other flavor's flat fields give", () => {
    const n = new Normalizer();
    const fromE2b = metricNames(normalizeNode(n, e2b.body[0], "nodes[0]"));
    const flat = renderNode(
      {
        nodeID: "node-1",
        clusterID: "c-eu",
        status: "ready",
        statusChangedAt: 0,
        version: "0.9.1",
        commit: "a1b2c3d",
        cpuCount: 32,
        memoryTotalBytes: 68_719_476_736,
        maxSandboxes: 100,
        createSuccesses: 340,
        createFails: 2,
      },
      {
        running: 12,
        starting: 1,
        paused: 0,
        allocatedCPU: 24,
        allocatedMemoryBytes: 25_769_803_776,
        usedCPU: 12,
        usedMemoryBytes: 1,
        usedDiskBytes: 1,
      },
      false,
    );
    const fromSandboxApi = metricNames(normalizeNode(n, flat, "nodes[0]"));
    const shared = [
      "allocated_cpu",
      "cpus",
      "memory_total_bytes",
      "allocated_memory_bytes",
      "sandboxes",
      "create_successes",
      "create_fails",
    ];
    for (const name of shared) {
      expect(fromE2b, name).toContain(name);
      expect(fromSandboxApi, name).toContain(name);
    }
    expect([...fromE2b].filter((s) => s?.startsWith("metrics_"))).toEqual([]);
  });

  it("lets a field the node carries at the top win over the same one under metrics", () => {
    const n = new Normalizer();
    const node = normalizeNode(n, { id: "n", cpuCount: 8, metrics: { cpuCount: 32, id: "x" } });
    expect(node.numeric).toEqual({ cpu_count: 8 });
    expect(node.id).toBe("n");
  });
});

describe("the dropped-values counter", () => {
  it("publishes the normalizer's counts by resource and field when scraped", async () => {
    const n = new Normalizer();
    const registry = new Registry();
    registerInvalidValueMetrics(registry, "sandbox", () => n.invalid.entries());
    deferList(n, fleet("not a date"), {}, slimItem(n)).items();
    deferList(n, [{ state: "running" }], {}, slimItem(n)).items();
    const text = await registry.metrics();
    expect(text).toContain(
      'sandbox_exporter_invalid_values_dropped_total{resource="sandbox",field="end_at"} 1',
    );
    expect(text).toContain(
      'sandbox_exporter_invalid_values_dropped_total{resource="sandbox",field="id"} 1',
    );
    deferList(n, fleet(""), {}, slimItem(n)).items();
    expect(await registry.metrics()).toContain(
      'sandbox_exporter_invalid_values_dropped_total{resource="sandbox",field="end_at"} 2',
    );
  });

  it("keeps its own counts per normalizer, and caps distinct fields", () => {
    const a = new InvalidValues();
    for (let i = 0; i < 300; i++) a.add("node", `f${i}`);
    const entries = a.entries();
    expect(entries).toHaveLength(257);
    expect(a.get("node", "other")).toBe(44);
    expect(new Normalizer().invalid.entries()).toEqual([]);
  });
});
