import { readFileSync } from "node:fs";
import { beforeEach, describe, expect, it } from "vitest";
import {
  deferList,
  type FieldMap,
  NormalizeError,
  Normalizer,
  normalizeHealth,
  normalizeList,
  normalizeLogEntry,
  normalizeNode,
  normalizeOverview,
  normalizeSandbox,
  normalizeTemplate,
  sanitizeLabelName,
  snakeCase,
} from "../../../src/platform/normalize/normalize.js";
import type { Sandbox } from "../../../src/platform/types.js";
import { parseIsoTime } from "../../../src/util/time.js";
import { inTimeZone } from "../../helpers/timezone.js";

interface Fixture {
  headers: Record<string, string>;
  body: unknown;
}

function fixture(name: string): Fixture {
  const url = new URL(`../../fixtures/platform/${name}.json`, import.meta.url);
  const f = JSON.parse(readFileSync(url, "utf8")) as Partial<Fixture>;
  return { headers: f.headers ?? {}, body: f.body };
}

/** Runs fn and returns what it threw. */
function thrown(fn: () => unknown): NormalizeError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NormalizeError);
    return err as NormalizeError;
  }
  throw new Error("expected a NormalizeError, nothing was thrown");
}

const s = (iso: string) => Date.parse(iso);

const SANDBOXES: Sandbox[] = [
  {
    id: "sb-a1",
    templateId: "base",
    state: "running",
    cpuCount: 2,
    memoryMB: 512,
    startedAt: s("2026-03-01T10:00:00Z"),
    endAt: s("2026-03-01T11:00:00Z"),
    metadata: { team: "ml", env: "prod" },
    extra: { disk_size_mb: 1024 },
  },
  {
    id: "sb-b2",
    templateId: "python-3",
    state: "paused",
    cpuCount: 4,
    memoryMB: 4096,
    startedAt: s("2026-03-01T09:30:00Z"),
    endAt: s("2026-03-01T12:30:00Z"),
    metadata: {},
    extra: { disk_size_mb: 2048 },
  },
  {
    id: "sb-c3",
    templateId: "base",
    state: "running",
    cpuCount: 1,
    memoryMB: 256,
    startedAt: s("2026-02-28T23:59:59Z"),
    endAt: s("2026-03-01T23:59:59Z"),
    metadata: { team: "web", replica: "3" },
    extra: { disk_size_mb: 512 },
  },
];

let n = new Normalizer();
beforeEach(() => {
  n = new Normalizer();
});

const sandboxItem = (raw: unknown, path: string) => normalizeSandbox(n, raw, path);

describe("normalizeSandbox and normalizeList over sandbox pages", () => {
  it.each(["sandboxes-e2b", "sandboxes-snake", "sandboxes-short", "sandboxes-nested"])(
    "reads %s as the same three sandboxes and the same next token",
    (name) => {
      const { headers, body } = fixture(name);
      const page = normalizeList(n, body, headers, sandboxItem);
      expect(page).toEqual({ items: SANDBOXES, nextToken: "tok-2" });
    },
  );

  it("gives every sandbox the same property order, so they share one object shape", () => {
    const pages = ["sandboxes-e2b", "sandboxes-short"].map((name) => {
      const { headers, body } = fixture(name);
      return normalizeList(n, body, headers, sandboxItem).items;
    });
    const orders = new Set(pages.flat().map((x) => Object.keys(x).join(",")));
    expect(orders.size).toBe(1);
  });

  it("reads a field map's keys, dotted paths included, instead of the built-in spellings", () => {
    const map: FieldMap = {
      sandbox: {
        id: "uid",
        templateId: "flavour",
        state: "phase",
        cpuCount: "resources.vcpu",
        memoryMB: "resources.ramMiB",
        startedAt: "born",
        metadata: "tags",
      },
      list: { items: "payload.rows", nextToken: "paging.after" },
    };
    const body = {
      payload: {
        rows: [
          {
            uid: "u1",
            id: "not-the-id",
            flavour: "tpl-z",
            template: "not-the-template",
            phase: "Hibernating",
            resources: { vcpu: 8, ramMiB: "2048" },
            born: "2026-03-01T10:00:00Z",
            tags: { team: "x" },
            gpuCount: 1,
          },
        ],
      },
      paging: { after: "p2" },
      nextToken: "not-the-token",
    };
    const m = new Normalizer(map);
    const page = normalizeList(m, body, {}, (raw, p) => normalizeSandbox(m, raw, p));
    expect(page.nextToken).toBe("p2");
    expect(page.items[0]).toEqual({
      id: "u1",
      templateId: "tpl-z",
      state: "hibernating",
      cpuCount: 8,
      memoryMB: 2048,
      startedAt: s("2026-03-01T10:00:00Z"),
      metadata: { team: "x" },
      extra: { gpu_count: 1, resources_vcpu: 8 },
    });
  });

  it("drops a bad optional value from its record, keeps the record and counts the field", () => {
    const { body } = fixture("sandboxes-snake");
    const rows = (body as { sandboxes: Array<Record<string, unknown>> }).sandboxes;
    const bad = { ...rows[2], started_at: "yesterday-ish" };
    const page = normalizeList(n, { sandboxes: [rows[0], rows[1], bad] }, {}, sandboxItem);
    expect(page.items.map((sb) => sb.id)).toEqual(["sb-a1", "sb-b2", "sb-c3"]);
    expect(page.items[2]?.startedAt).toBeUndefined();
    expect(page.items[2]?.state).toBe(SANDBOXES[2]?.state);
    expect(n.invalid.entries()).toEqual([{ resource: "sandbox", field: "started_at", count: 1 }]);
  });

  it("leaves out and counts records without an id on every page, whichever list held them", () => {
    const { body } = fixture("sandboxes-snake");
    const rows = (body as { sandboxes: Array<Record<string, unknown>> }).sandboxes;
    const { sandbox_id: _, ...bad } = rows[0] as Record<string, unknown>;
    const ids = (b: unknown) => normalizeList(n, b, {}, sandboxItem).items.map((sb) => sb.id);
    for (let page = 0; page < 3; page++) {
      expect(ids({ sandboxes: [rows[0], bad] })).toEqual(["sb-a1"]);
      expect(ids({ items: [bad, "sb-x", null, 7] })).toEqual([]);
      expect(ids([rows[0], rows[1], bad])).toEqual(["sb-a1", "sb-b2"]);
    }
    expect(n.invalid.get("sandbox", "id")).toBe(9);
    expect(n.invalid.get("sandbox", "record")).toBe(9);
  });

  it("quotes at most 80 characters of a bad list and nothing else of the body", () => {
    const long = "x".repeat(500);
    const err = thrown(() =>
      normalizeList(n, { sandboxes: long, secret: "hunter2" }, {}, sandboxItem),
    );
    expect(err.path).toBe("sandboxes");
    expect(err.received.length).toBeLessThanOrEqual("string ".length + 80 + 2);
    expect(err.message).not.toContain("hunter2");
    expect(thrown(() => normalizeSandbox(n, { sandboxID: { n: 1 } })).message).toBe(
      "sandbox.sandboxID: expected a sandbox id (key sandboxID|sandboxId|sandbox_id|id), got object",
    );
  });

  it("rejects a record without an id, naming the spellings it looked for", () => {
    const err = thrown(() => normalizeSandbox(n, { state: "running" }, "sandboxes[0]"));
    expect(err.path).toBe("sandboxes[0].sandboxID");
    expect(err.message).toContain("sandboxID|sandboxId|sandbox_id|id");
    expect(() => normalizeSandbox(n, { id: "" })).toThrow(NormalizeError);
    expect(() => normalizeSandbox(n, "sb-1", "sandboxes[4]")).toThrow(/^sandboxes\[4\]:/);
  });

  it("defaults the template to empty and the state to unknown, and drops zero times", () => {
    expect(normalizeSandbox(n, { id: 7, endAt: "0001-01-01T00:00:00Z", startedAt: 0 })).toEqual({
      id: "7",
      templateId: "",
      state: "unknown",
      metadata: {},
      extra: {},
    });
  });

  it("reads epoch micro- and nanoseconds, offsets, and zone-less ISO text as UTC", () => {
    const at = s("2026-03-01T10:00:00.123Z");
    for (const v of [
      at * 1000,
      at * 1_000_000,
      "2026-03-01T12:00:00.123+02:00",
      "2026-03-01 10:00:00.123",
      "Sun, 01 Mar 2026 10:00:00.123 GMT",
    ]) {
      expect(normalizeSandbox(n, { id: "a", startedAt: v }).startedAt).toBe(at);
    }
  });

  it("keeps the first spelling that has a value even when records change shape or carry nulls", () => {
    const rows = [
      { id: "1", state: null, status: "a" },
      { id: "2", state: "b", status: "a" },
      { id: "3", status: "c" },
      { id: "4", state: "d", status: "x" },
      { id: "5", State: "E" },
    ];
    expect(rows.map((r) => normalizeSandbox(n, r).state)).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("reads a Go struct without JSON tags (PascalCase) through loose matching", () => {
    const sb = normalizeSandbox(n, { SandboxID: "p1", TemplateID: "t", State: "Running", CPU: 2 });
    expect(sb).toMatchObject({ id: "p1", templateId: "t", state: "running", cpuCount: 2 });
    expect(sb.extra).toEqual({});
  });

  it("keeps unknown numeric fields in extra under snake_case names, nested ones flattened", () => {
    const sb = normalizeSandbox(n, {
      sandboxID: "a",
      diskSizeMB: 10,
      network: { egressBytes: 5, mode: "open" },
      lifecycle: { autoResume: true },
      alias: "base",
      lastActivityAt: 1772359200,
    });
    expect(sb.extra).toEqual({
      disk_size_mb: 10,
      network_egress_bytes: 5,
      last_activity_at_timestamp_seconds: 1772359200,
    });
  });
});

describe("times without a zone, in a process whose local zone is not UTC", () => {
  inTimeZone("America/New_York");

  it("reads mapped and unmapped zone-less ISO times as UTC", () => {
    expect(new Date(2026, 2, 1, 10).getTimezoneOffset()).not.toBe(0);
    const at = Date.UTC(2026, 2, 1, 10);
    const sb = normalizeSandbox(n, {
      id: "a",
      startedAt: "2026-03-01T10:00:00",
      endAt: "2026-03-01 10:00",
      lastActivityAt: "2026-03-01T10:00:00",
    });
    expect(sb.startedAt).toBe(at);
    expect(sb.endAt).toBe(at);
    expect(sb.extra).toEqual({ last_activity_at_timestamp_seconds: at / 1000 });
  });
});

describe("shared sandbox fields", () => {
  it("shares one frozen metadata map and template id between equal sandboxes, never between different ones", () => {
    const rec = (id: string, metadata: Record<string, string>) => ({
      sandboxID: id,
      templateID: `tpl-${"x".repeat(3)}`,
      metadata,
    });
    const a = normalizeSandbox(n, JSON.parse(JSON.stringify(rec("a", { team: "ml", env: "dev" }))));
    const b = normalizeSandbox(n, JSON.parse(JSON.stringify(rec("b", { team: "ml", env: "dev" }))));
    const c = normalizeSandbox(
      n,
      JSON.parse(JSON.stringify(rec("c", { team: "ml", env: "prod" }))),
    );
    expect(b.metadata).toBe(a.metadata);
    expect(Object.isFrozen(a.metadata)).toBe(true);
    expect(c.metadata).not.toBe(a.metadata);
    expect(c.metadata).toEqual({ team: "ml", env: "prod" });
    // Keys and values that would run together without the length prefixes stay apart.
    const d = normalizeSandbox(n, rec("d", { "a\u0000b": "c" }));
    const e = normalizeSandbox(n, rec("e", { a: "b\u0000c" }));
    expect(e.metadata).toEqual({ a: "b\u0000c" });
    expect(d.metadata).toEqual({ "a\u0000b": "c" });
    const f = normalizeSandbox(n, rec("f", { ab: "c" }));
    const g = normalizeSandbox(n, rec("g", { a: "bc" }));
    expect(g.metadata).toEqual({ a: "bc" });
    expect(f.metadata).toEqual({ ab: "c" });
  });
});

describe("normalizeNode", () => {
  it.each(["nodes-e2b", "nodes-snake", "nodes-pascal"])(
    "reads %s as the same nodes, numeric and info fields included",
    (name) => {
      const { headers, body } = fixture(name);
      const page = normalizeList(n, body, headers, (raw, p) => normalizeNode(n, raw, p));
      expect(page.nextToken).toBeUndefined();
      const machine = {
        machine_info_cpu_family: "6",
        machine_info_cpu_model: "143",
        machine_info_cpu_model_name: "Intel Xeon",
        machine_info_cpu_architecture: "x86_64",
      };
      expect(page.items).toEqual([
        {
          id: "node-1",
          status: "ready",
          numeric: {
            sandbox_count: 12,
            sandbox_starting_count: 1,
            create_successes: 340,
            create_fails: 2,
            last_heartbeat_at_timestamp_seconds: 1772359110,
            allocated_cpu: 24,
            cpu_percent: 37,
            cpu_count: 32,
            allocated_memory_bytes: 25769803776,
            memory_used_bytes: 17179869184,
            memory_total_bytes: 68719476736,
          },
          info: {
            service_instance_id: "si-01",
            cluster_id: "c-eu",
            version: "0.9.1",
            commit: "a1b2c3d",
            ...machine,
          },
        },
        {
          id: "node-2",
          status: "draining",
          numeric: {
            sandbox_count: 0,
            sandbox_starting_count: 0,
            create_successes: 12,
            create_fails: 0,
            last_heartbeat_at_timestamp_seconds: 1772359110,
            allocated_cpu: 0,
            cpu_percent: 3,
            cpu_count: 32,
            allocated_memory_bytes: 0,
            memory_used_bytes: 1073741824,
            memory_total_bytes: 68719476736,
          },
          info: {
            service_instance_id: "si-02",
            cluster_id: "c-eu",
            version: "0.9.0",
            commit: "9f8e7d6",
            ...machine,
          },
        },
      ]);
    },
  );

  it("never turns a token, secret or password field into info", () => {
    const node = normalizeNode(n, {
      nodeID: "n",
      joinToken: "t0k",
      auth: { apiKey: "k" },
      secretRef: "s",
      labels: { password: "p", zone: "a" },
    });
    expect(JSON.stringify(node)).not.toMatch(/t0k|"k"|"s"|"p"/);
    expect(node.info).toEqual({ labels_zone: "a" });
  });

  it("keeps from labels exactly the fields the secrets rule calls secret", () => {
    const node = normalizeNode(n, {
      nodeID: "n",
      apikey: "glued",
      sessionCookie: "c",
      privateKeyPem: "-----BEGIN",
      keyFile: "/etc/node/key.pem",
      authStyle: "mtls",
      tokenTtl: 30,
    });
    expect(JSON.stringify(node)).not.toMatch(/glued|"c"|BEGIN/);
    // Where a secret is or how it is used is no secret; a number is never one.
    expect(node.info).toEqual({ key_file: "/etc/node/key.pem", auth_style: "mtls" });
    expect(node.numeric).toEqual({ token_ttl: 30 });
  });

  it("follows the field map, where a replaced spelling is just another field", () => {
    const node = normalizeNode(new Normalizer({ node: { id: "host" } }), {
      host: "h1",
      phase: "UP",
      id: "x",
    });
    expect(node).toEqual({
      id: "h1",
      status: "unknown",
      numeric: {},
      info: { phase: "UP", id: "x" },
    });
    const m = normalizeNode(new Normalizer({ node: { id: "host", status: "phase" } }), {
      host: "h1",
      phase: "UP",
    });
    expect(m).toEqual({ id: "h1", status: "up", numeric: {}, info: {} });
  });
});

describe("normalizeTemplate", () => {
  it.each(["templates-e2b", "templates-snake", "templates-short"])(
    "reads %s as the same templates",
    (name) => {
      const { headers, body } = fixture(name);
      const page = normalizeList(n, body, headers, (raw, p) => normalizeTemplate(n, raw, p));
      const times = {
        created_at_timestamp_seconds: 1762070400,
        updated_at_timestamp_seconds: 1772210700,
      };
      expect(page).toEqual({
        items: [
          {
            id: "base",
            status: "ready",
            version: "b-7f3a",
            replicas: 3,
            numeric: {
              cpu_count: 2,
              memory_mb: 512,
              disk_size_mb: 1024,
              spawn_count: 1520,
              build_count: 7,
              last_spawned_at_timestamp_seconds: 1772359110,
              ...times,
            },
            info: { public: "true", envd_version: "0.2.0" },
          },
          {
            id: "python-3",
            status: "error",
            version: "b-0c41",
            replicas: 0,
            error: "build failed: step 3 exited with 1",
            numeric: {
              cpu_count: 4,
              memory_mb: 4096,
              disk_size_mb: 2048,
              spawn_count: 0,
              build_count: 2,
              ...times,
            },
            info: { public: "false", envd_version: "0.2.0" },
          },
        ],
      });
    },
  );

  it("takes error text from a string, a {message} object or a flag, and none from false or empty", () => {
    const error = (e: unknown) => normalizeTemplate(n, { id: "t", error: e }).error;
    expect(error("boom")).toBe("boom");
    expect(error({ message: "boom", code: 2 })).toBe("boom");
    expect(error({ code: 2 })).toBe('{"code":2}');
    expect(error(true)).toBe("true");
    expect([error(false), error(""), error({}), error(null)]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe("normalizeOverview", () => {
  it.each(["overview-camel", "overview-snake", "overview-pascal"])(
    "keeps every numeric field of %s, numeric text included, snake_cased and flattened",
    (name) => {
      expect(normalizeOverview(n, fixture(name).body)).toEqual({
        numeric: {
          node_count: 3,
          sandbox_count: 120,
          cpu_allocated: 64,
          memory_total_bytes: 1073741824,
          resources_cpu_total: 96,
          updated_at_timestamp_seconds: 1772359200,
        },
      });
    },
  );

  it("rejects a body that is not an object", () => {
    expect(thrown(() => normalizeOverview(n, [1, 2])).message).toBe(
      "overview: expected an object, got an array of 2",
    );
  });
});

describe("normalizeHealth", () => {
  it.each([
    [204, undefined, true, undefined],
    [204, "", true, undefined],
    [200, "", true, undefined],
    [200, " \n", true, undefined],
    [200, "OK", true, "ok"],
    [200, { status: "ok" }, true, "ok"],
    [200, { status: "down" }, false, "down"],
    [200, { status: "UP" }, true, "up"],
    [200, { status: "pass" }, true, "pass"],
    [200, { status: "degraded" }, true, "degraded"],
    [200, { state: "ready" }, true, "ready"],
    [200, { health: { status: "UP" } }, true, "up"],
    [200, { healthy: true }, true, "up"],
    [200, { status: "unhealthy" }, false, "unhealthy"],
    [200, { health: "DOWN" }, false, "down"],
    [200, { status: "fail" }, false, "fail"],
    [200, { state: "error" }, false, "error"],
    [200, { ok: false }, false, "down"],
    [200, "UNHEALTHY\n", false, "unhealthy"],
    [200, { status: "unknown" }, false, "unknown"],
    [503, { status: "ok" }, false, "ok"],
    [500, "", false, undefined],
    [503, "<html><body>Service Unavailable</body></html>", false, undefined],
  ])("status %d with %j is up=%s (%s)", (status, body, up, word) => {
    const h = normalizeHealth(status, body);
    expect(h).toEqual(word === undefined ? { up } : { up, status: word });
  });

  it.each([
    ["an HTML page", "<html><body>It works</body></html>"],
    ["a long text", "Welcome to the gateway. The service you asked for is listening here."],
    ["several lines", "ok\nbut see the log"],
    ["JSON null", null],
    ["JSON without a status", { version: "1.4.2" }],
    ["an empty JSON object", {}],
    ["a JSON list", []],
    ["a status that is not a word", { status: 200 }],
    ["a status that is a page", { status: "<html>up</html>" }],
  ])("reads %s with status 200 as unknown, which is not up", (_label, body) => {
    expect(normalizeHealth(200, body)).toEqual({ up: false, status: "unknown" });
  });
});

describe("normalizeLogEntry", () => {
  it.each([
    ["logs-e2b-legacy", undefined],
    ["logs-e2b-v2", "1772359201250"],
    ["logs-short", "1772359201250"],
  ])("reads %s as the same entries (next token %s), keeping the raw record", (name, token) => {
    const { headers, body } = fixture(name);
    const page = normalizeList(n, body, headers, (raw, p) => normalizeLogEntry(n, raw, p));
    expect(page.nextToken).toBe(token);
    expect(page.items.map((e) => [e.timestamp, e.message])).toEqual([
      [s("2026-03-01T10:00:00Z"), "envd started"],
      [s("2026-03-01T10:00:01.250Z"), "process 42 exited with 0"],
    ]);
    const list = Array.isArray(body) ? body : (body as { logs: unknown[] }).logs;
    expect(page.items[0]?.raw).toBe(list[0]);
  });

  it("follows the field map and leaves out what is absent", () => {
    const map = { log: { timestamp: "when", message: "text" } };
    expect(
      normalizeLogEntry(new Normalizer(map), {
        when: "2026-03-01T10:00:00Z",
        text: "hi",
        line: "no",
      }),
    ).toEqual({
      timestamp: s("2026-03-01T10:00:00Z"),
      message: "hi",
      raw: { when: "2026-03-01T10:00:00Z", text: "hi", line: "no" },
    });
    expect(normalizeLogEntry(n, { level: "info" })).toEqual({ raw: { level: "info" } });
  });
});

describe("normalizeList wrappers and tokens", () => {
  const ids = (page: { items: Sandbox[] }) => page.items.map((x) => x.id);
  const rows = [{ id: "a" }, { id: "b" }];

  it.each([
    ["a bare array, token in a mixed-case header", rows, { "X-NEXT-TOKEN": "t" }],
    ["`data`, token in next_cursor", { data: rows, next_cursor: "t" }, {}],
    ["`results`, token under meta", { results: rows, meta: { next_token: "t" } }, {}],
    ["an only array field, token as a cursor object", { rows, cursor: { next: "t" } }, {}],
    ["a next link", { entries: rows, next: "https://api.example/v2/sandboxes?nextToken=t" }, {}],
    ["PascalCase", { Sandboxes: rows, NextToken: "t" }, {}],
    ["a header given as a list", rows, { "x-next-token": ["t", "u"] }],
  ])("reads %s", (_label, body, headers) => {
    const page = normalizeList(n, body, headers as Record<string, string>, sandboxItem);
    expect([ids(page), page.nextToken]).toEqual([["a", "b"], "t"]);
  });

  it.each([
    ["an empty token", { items: rows, nextToken: "" }, { "x-next-token": "h" }],
    ["a null token and no header", { items: rows, nextToken: null }, {}],
    ["hasMore false", { items: rows, cursor: "c", hasMore: false }, {}],
    ["next false", { items: rows, next: false }, {}],
  ])("ends the walk on %s", (_label, body, headers) => {
    expect(normalizeList(n, body, headers, sandboxItem).nextToken).toBeUndefined();
  });

  it("falls back to the header when the body's token is null", () => {
    const page = normalizeList(
      n,
      { items: rows, nextToken: null },
      { "x-next-token": "h" },
      sandboxItem,
    );
    expect(page.nextToken).toBe("h");
  });

  it.each([
    ["[]", []],
    ['{"sandboxes": []}', { sandboxes: [] }],
    ['{"items": [], "nextToken": null}', { items: [], nextToken: null }],
    ['{"data": {"items": []}}', { data: { items: [] } }],
  ])("reads a real empty list, %s, as an empty page", (_label, body) => {
    expect(normalizeList(n, body, {}, sandboxItem)).toEqual({ items: [] });
  });

  it.each([
    ["null", null, "body", "got null"],
    ["an empty body", "", "body", "got an empty body"],
    ["a blank body", " \r\n ", "body", "got an empty body"],
    ["text", "upstream timeout", "body", 'got string "upstream timeout"'],
    ["a number", 0, "body", "got number 0"],
    ["a boolean", true, "body", "got boolean true"],
    ["a null list", { sandboxes: null, nextToken: null }, "sandboxes", "got null"],
    ["an object without a list", { nextToken: null }, "body", "got an object with keys nextToken"],
    ["an empty object", {}, "body", "got an object with keys (none)"],
  ])("rejects %s, naming what it expected and what it got", (_label, body, path, got) => {
    const err = thrown(() => normalizeList(n, body, {}, sandboxItem));
    expect(err.path).toBe(path);
    expect(err.message).toMatch(/: expected an? (list|array)/);
    expect(err.message.endsWith(got)).toBe(true);
  });

  it("uses the caller's wrapper keys", () => {
    const page = normalizeList(n, { hosts: rows, items: [] }, {}, sandboxItem, {
      wrapperKeys: ["hosts"],
    });
    expect(ids(page)).toEqual(["a", "b"]);
  });

  it("names the keys it saw when no list is found, and a wrapper that is not a list", () => {
    expect(thrown(() => normalizeList(n, { a: 1, b: [], c: [] }, {}, sandboxItem)).message).toMatch(
      /^body: expected an array, or an object holding one under sandboxes\|items.*, got an object with keys a, b, c$/,
    );
    expect(thrown(() => normalizeList(n, { items: "x" }, {}, sandboxItem)).path).toBe("items");
    expect(thrown(() => normalizeList(n, 42, {}, sandboxItem)).message).toBe(
      "body: expected a list (an array, or an object holding one), got number 42",
    );
  });

  it("reports the page size before normalizing, and normalizes only when asked", () => {
    let calls = 0;
    const page = deferList(n, { items: rows, nextToken: "n" }, {}, (raw, p) => {
      calls++;
      return sandboxItem(raw, p);
    });
    expect([page.size, page.nextToken, calls]).toEqual([2, "n", 0]);
    expect(page.items().map((x) => x.id)).toEqual(["a", "b"]);
    expect(calls).toBe(2);
  });
});

describe("names", () => {
  it("snake-cases camelCase, acronyms, units and PascalCase", () => {
    const cases: Array<[string, string]> = [
      ["cpuCount", "cpu_count"],
      ["memoryMB", "memory_mb"],
      ["HTTPPort", "http_port"],
      ["sandboxID", "sandbox_id"],
      ["allocatedCPU", "allocated_cpu"],
      ["numCPUs", "num_cpus"],
      ["memUsedMiB", "mem_used_mib"],
      ["sandboxIDs", "sandbox_ids"],
      ["MemoryTotalBytes", "memory_total_bytes"],
      ["disk-size.gb", "disk_size_gb"],
      ["already_snake", "already_snake"],
    ];
    expect(cases.map(([k]) => snakeCase(k))).toEqual(cases.map(([, v]) => v));
  });

  it("makes valid Prometheus label names", () => {
    const cases: Array<[string, string]> = [
      ["team", "team"],
      ["app.kubernetes.io/name", "app_kubernetes_io_name"],
      ["9lives", "_9lives"],
      ["__reserved", "_reserved"],
      ["", "_"],
      ["ünïcode", "_n_code"],
    ];
    expect(cases.map(([k]) => sanitizeLabelName(k))).toEqual(cases.map(([, v]) => v));
  });

  it("parses ISO 8601 like Date.parse does for zoned text, and refuses other text", () => {
    for (const iso of [
      "2026-03-01T10:00:00Z",
      "1999-12-31T23:59:59.999-05:30",
      "2024-02-29T00:00Z",
    ]) {
      expect(parseIsoTime(iso)).toBe(Date.parse(iso));
    }
    expect(parseIsoTime("yesterday")).toBeUndefined();
    expect(parseIsoTime("2026-13-01T00:00:00Z")).toBeUndefined();
  });
});
