import { describe, expect, it } from "vitest";
import {
  deferList,
  Normalizer,
  normalizeList,
  normalizeSandbox,
} from "../../../src/platform/normalize/normalize.js";

/** What E2B's POST /sandboxes answers: no metadata, no end time. */
const CREATED = {
  sandboxID: "probe-1",
  templateID: "base",
  clientID: "6532622b",
  envdVersion: "0.2.0",
  envdAccessToken: "ea_tok",
  domain: "e2b.app",
};

/** A /v2/sandboxes page, every record carrying metadata and an end time. */
function listPage(): Array<Record<string, unknown>> {
  return ["a", "b", "c"].map((id, i) => ({
    sandboxID: `sb-${id}`,
    templateID: "base",
    startedAt: "2026-03-01T10:00:00Z",
    endAt: "2026-03-01T11:00:00Z",
    cpuCount: 2,
    memoryMB: 512,
    metadata: { "sandbox-exporter/probe": "default", n: String(i) },
    state: "running",
  }));
}

const slimWalk = (n: Normalizer, body: unknown) =>
  deferList(n, body, {}, (raw, p) => normalizeSandbox(n, raw, p, true)).items();
const fullRead = (n: Normalizer, body: unknown) =>
  normalizeList(n, body, {}, (raw, p) => normalizeSandbox(n, raw, p)).items;

describe("Normalizer memos", () => {
  it("reads the metadata of listed sandboxes after a create answer without it and a slim walk", () => {
    const n = new Normalizer();
    expect(normalizeSandbox(n, CREATED, "created").metadata).toEqual({});
    const slim = slimWalk(n, listPage());
    // A slim walk keeps the end time and, of the metadata, the probe tag alone.
    expect(slim.map((s) => [s.endAt, s.metadata])).toEqual(
      listPage().map(() => [
        Date.parse("2026-03-01T11:00:00Z"),
        { "sandbox-exporter/probe": "default" },
      ]),
    );
    // The sweep's read: same key shape as the slim walk, but metadata and endAt were never read
    // under it, so the "absent" memo from the create answer must not be trusted.
    const full = fullRead(n, listPage());
    expect(full.map((s) => s.metadata)).toEqual(listPage().map((r) => r.metadata));
    expect(full.every((s) => s.endAt === Date.parse("2026-03-01T11:00:00Z"))).toBe(true);
  });

  it("reads every field again when records go back to a shape seen before", () => {
    const n = new Normalizer();
    const withMeta = listPage();
    const without = withMeta.map(({ metadata: _, ...rest }) => rest);
    for (let round = 0; round < 3; round++) {
      expect(fullRead(n, without).map((s) => s.metadata)).toEqual([{}, {}, {}]);
      expect(fullRead(n, withMeta).map((s) => s.metadata.n)).toEqual(["0", "1", "2"]);
    }
  });

  it("trusts no memo of a field a dropped record did not reach", () => {
    const n = new Normalizer();
    const rows = listPage();
    normalizeSandbox(n, CREATED, "created");
    const { sandboxID: _, ...bad } = rows[0] as Record<string, unknown>;
    expect(fullRead(n, [bad])).toEqual([]);
    expect(n.invalid.get("sandbox", "id")).toBe(1);
    expect(fullRead(n, rows.slice(1)).map((s) => s.metadata.n)).toEqual(["1", "2"]);
  });
});

describe("separate Normalizers", () => {
  it("share no table: one's slim walk leaves the other's shape and memos as they were", () => {
    const prober = new Normalizer();
    const poller = new Normalizer();
    normalizeSandbox(prober, CREATED, "created");
    const shape = prober.sandbox.shape;
    slimWalk(poller, listPage());
    slimWalk(
      poller,
      listPage().map(({ cpuCount: _, ...rest }) => rest),
    );
    expect(prober.sandbox.shape).toBe(shape);
    expect(poller.sandbox).not.toBe(prober.sandbox);
    expect(poller.sandbox.fields.metadata).not.toBe(prober.sandbox.fields.metadata);
    expect(fullRead(prober, listPage()).map((s) => s.metadata.n)).toEqual(["0", "1", "2"]);
  });

  it("compile their own tables for the same field map object, and share no cached value", () => {
    const map = { sandbox: { metadata: "tags" } };
    const a = new Normalizer(map);
    const b = a.fresh();
    expect(b.fieldMap).toBe(map);
    expect(b.sandbox).not.toBe(a.sandbox);
    expect(b.list).not.toBe(a.list);
    const rec = { id: "x", tags: { team: "ml" }, diskSizeMB: 5 };
    const fromA = normalizeSandbox(a, structuredClone(rec));
    const againA = normalizeSandbox(a, structuredClone(rec));
    const fromB = normalizeSandbox(b, structuredClone(rec));
    // Within one normalizer equal maps are one frozen object; across two, never.
    expect(againA.metadata).toBe(fromA.metadata);
    expect(againA.extra).toBe(fromA.extra);
    expect(fromB.metadata).toEqual(fromA.metadata);
    expect(fromB.metadata).not.toBe(fromA.metadata);
    expect(fromB.extra).not.toBe(fromA.extra);
  });
});

describe("slim reads", () => {
  const record = (metadata: unknown, endAt: unknown = "2026-03-01T11:00:00Z") => ({
    sandboxID: "sb-1",
    templateID: "base",
    state: "running",
    endAt,
    metadata,
  });
  const slim = (raw: unknown) => normalizeSandbox(new Normalizer(), raw, "sandboxes[0]", true);

  it("keep the end time, absent when the record has none or a zero time", () => {
    expect(slim(record({})).endAt).toBe(Date.parse("2026-03-01T11:00:00Z"));
    expect(slim(record({}, "0001-01-01T00:00:00Z")).endAt).toBeUndefined();
    expect(slim({ sandboxID: "sb-1" }).endAt).toBeUndefined();
  });

  it("keep only the probe tag, from an object or a list of pairs, and share its map", () => {
    const n = new Normalizer();
    const tag = { "sandbox-exporter/probe": "default" };
    const a = normalizeSandbox(n, record({ team: "ml", ...tag }), "a", true);
    const b = normalizeSandbox(
      n,
      record([
        { key: "team", value: "ml" },
        { name: "sandbox-exporter/probe", value: "default" },
      ]),
      "b",
      true,
    );
    expect(a.metadata).toEqual(tag);
    expect(b.metadata).toBe(a.metadata);
    expect(slim(record({ team: "ml" })).metadata).toEqual({});
    expect(slim(record({ "sandbox-exporter/probe": 7 })).metadata).toEqual({
      "sandbox-exporter/probe": "7",
    });
  });

  it("count no metadata they do not keep, where a full read drops and counts it", () => {
    for (const bad of [42, "team=ml", [{ value: "no key" }]]) {
      const s = new Normalizer();
      expect(normalizeSandbox(s, record(bad), "s", true).metadata).toEqual({});
      expect(s.invalid.entries()).toEqual([]);
      const full = new Normalizer();
      const sb = normalizeSandbox(full, record(bad), "s");
      expect(sb.metadata).toEqual({});
      expect(sb.id).toBeTruthy();
      expect(full.invalid.entries()).toEqual([
        { resource: "sandbox", field: "metadata", count: 1 },
      ]);
    }
  });
});
