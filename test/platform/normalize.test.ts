import { describe, expect, it } from "vitest";
import {
  NormalizeError,
  normalizeHealth,
  normalizeList,
  normalizeLogEntry,
  normalizeNode,
  normalizeOverview,
  normalizeSandbox,
  normalizeTemplate,
  snakeCase,
} from "../../src/platform/normalize.js";

const START_ISO = "2026-11-01T10:00:00.000Z";
const START_MS = Date.parse(START_ISO);

const sandboxShapes = {
  e2b: {
    sandboxID: "sb-1",
    templateID: "tpl-a",
    state: "RUNNING",
    cpuCount: 2,
    memoryMB: 512,
    startedAt: START_ISO,
    metadata: { team: "x" },
    diskSizeMB: 1024,
  },
  snake: {
    sandbox_id: "sb-1",
    template_id: "tpl-a",
    status: "running",
    cpu_count: "2",
    memory_mb: 512,
    started_at: START_MS / 1000,
    labels: { team: "x" },
    disk_size_mb: 1024,
  },
  short: {
    id: "sb-1",
    template: "tpl-a",
    state: "running",
    cpu: 2,
    memory: "512",
    startTime: START_MS,
    labels: { team: "x" },
    diskSizeMB: 1024,
  },
};

describe("normalizeSandbox", () => {
  it("reads E2B camelCase, snake_case and short spellings as the same sandbox", () => {
    const [a, b, c] = Object.values(sandboxShapes).map((raw) => normalizeSandbox(raw));
    expect(a).toEqual({
      id: "sb-1",
      templateId: "tpl-a",
      state: "running",
      cpuCount: 2,
      memoryMB: 512,
      startedAt: START_MS,
      metadata: { team: "x" },
      extra: { disk_size_mb: 1024 },
    });
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });

  it("follows the field map over the built-in spellings", () => {
    const s = normalizeSandbox(
      { uid: "u1", id: "ignored", flavour: "tpl-z" },
      { sandbox: { id: "uid", templateId: "flavour" } },
    );
    expect(s.id).toBe("u1");
    expect(s.templateId).toBe("tpl-z");
  });

  it("names the field path of a bad value", () => {
    const err = (() => {
      try {
        normalizeSandbox({ sandboxID: "s", startedAt: "yesterday-ish" }, undefined, "sandboxes[3]");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NormalizeError);
    expect((err as NormalizeError).path).toBe("sandboxes[3].startedAt");
  });

  it("rejects a record without an id", () => {
    expect(() => normalizeSandbox({ state: "running" }, undefined, "sandboxes[0]")).toThrow(
      /sandboxes\[0\].*missing sandbox id/,
    );
  });
});

describe("normalizeNode and normalizeTemplate", () => {
  it("reads three node shapes alike and keeps unknown numeric fields", () => {
    const shapes = [
      { nodeID: "n1", status: "Ready", sandboxCount: 3, cpuCount: 8, version: "1.2" },
      { node_id: "n1", state: "ready", sandbox_count: 3, cpu_count: 8, version: "1.2" },
      { id: "n1", status: "ready", sandboxCount: 3, cpuCount: 8, version: "1.2" },
    ].map((raw) => normalizeNode(raw));
    expect(shapes[0]).toEqual({
      id: "n1",
      status: "ready",
      numeric: { sandbox_count: 3, cpu_count: 8 },
      info: { version: "1.2" },
    });
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
  });

  it("reads three template shapes alike, with error text from a string or an object", () => {
    const shapes = [
      {
        templateID: "t1",
        status: "error",
        version: "v3",
        replicas: 2,
        error: "build failed",
        spawnCount: 4,
      },
      {
        template_id: "t1",
        build_status: "ERROR",
        version: "v3",
        replica_count: 2,
        error_message: "build failed",
        spawn_count: 4,
      },
      {
        id: "t1",
        state: "error",
        version: "v3",
        replicas: "2",
        error: { message: "build failed" },
        spawnCount: 4,
      },
    ].map((raw) => normalizeTemplate(raw));
    expect(shapes[0]).toEqual({
      id: "t1",
      status: "error",
      version: "v3",
      replicas: 2,
      error: "build failed",
      numeric: { spawn_count: 4 },
      info: {},
    });
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
  });
});

describe("normalizeList", () => {
  const item = (raw: unknown, path: string) => normalizeSandbox(raw, undefined, path);
  const rows = [sandboxShapes.e2b, { ...sandboxShapes.e2b, sandboxID: "sb-2" }];

  it("reads a bare array with the token in x-next-token, and wrapped lists with body tokens, alike", () => {
    const bare = normalizeList(rows, { "X-Next-Token": "t2" }, item);
    const wrapped = normalizeList({ sandboxes: rows, nextToken: "t2" }, {}, item);
    const items = normalizeList({ items: rows, pagination: { next_cursor: "t2" } }, {}, item);
    expect(bare.items.map((s) => s.id)).toEqual(["sb-1", "sb-2"]);
    expect(bare.nextToken).toBe("t2");
    expect(wrapped).toEqual(bare);
    expect(items).toEqual(bare);
  });

  it("ends on an empty or null token", () => {
    expect(normalizeList({ data: rows, nextToken: "" }, {}, item).nextToken).toBeUndefined();
    expect(normalizeList({ data: rows, nextToken: null }, {}, item).nextToken).toBeUndefined();
  });

  it("names the item of a bad record", () => {
    expect(() => normalizeList({ sandboxes: [rows[0], { state: "x" }] }, {}, item)).toThrow(
      /sandboxes\[1\]/,
    );
  });
});

describe("overview, health, logs", () => {
  it("keeps every numeric overview field, snake_cased, flattening one level", () => {
    expect(
      normalizeOverview({
        nodeCount: 3,
        memoryTotalBytes: "1024",
        usage: { cpuPct: 5 },
        name: "x",
      }),
    ).toEqual({
      numeric: { node_count: 3, memory_total_bytes: 1024, usage_cpu_pct: 5 },
    });
  });

  it.each([
    [200, { status: "ok" }, true],
    [200, "OK", true],
    [200, "", true],
    [200, { status: "unhealthy" }, false],
    [503, { status: "ok" }, false],
  ])("health %d %j -> up=%s", (status, body, up) => {
    expect(normalizeHealth(status, body).up).toBe(up);
  });

  it("reads log entries with line or message and ISO or epoch times", () => {
    const a = normalizeLogEntry({ timestamp: START_ISO, line: "hi" });
    const b = normalizeLogEntry({ time: START_MS / 1000, message: "hi" });
    expect([a.timestamp, a.message]).toEqual([START_MS, "hi"]);
    expect([b.timestamp, b.message]).toEqual([START_MS, "hi"]);
  });

  it("snake-cases acronyms", () => {
    expect(["cpuCount", "memoryMB", "HTTPPort", "sandboxID"].map(snakeCase)).toEqual([
      "cpu_count",
      "memory_mb",
      "http_port",
      "sandbox_id",
    ]);
  });
});
