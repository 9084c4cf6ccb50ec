// Usage samples pinned to E2B's published SandboxMetric / SandboxesWithMetrics schemas
// (spec/openapi.yml of e2b-dev/infra), written by hand from the document, not from the simulator.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

import {
  InvalidValues,
  normalizeUsageList,
  normalizeUsageMap,
} from "../../../src/platform/normalize/normalize.js";

const fixture = JSON.parse(
  readFileSync(new URL("../../fixtures/platform/usage-e2b.json", import.meta.url), "utf8"),
) as { sandboxes: Record<string, unknown> };

describe("usage samples", () => {
  it("reads GET /sandboxes/metrics: a sample per id, times from timestampUnix", () => {
    const m = normalizeUsageMap(fixture);
    expect([...m.keys()]).toEqual(["i1ptg5oe0bqyj7ke5wqzb", "ixbd1cvhqs8sd0qzmxbs6"]);
    expect(m.get("i1ptg5oe0bqyj7ke5wqzb")).toEqual({
      at: 1_795_435_200_000,
      cpuPct: 1.25,
      cpuCount: 2,
      memUsedBytes: 134_217_728,
      memTotalBytes: 536_870_912,
      diskUsedBytes: 104_857_600,
      diskTotalBytes: 1_073_741_824,
    });
  });

  it("reads a history list oldest first, and the deprecated timestamp when timestampUnix is absent", () => {
    const [a, b] = Object.values(fixture.sandboxes) as Array<Record<string, unknown>>;
    const later = { ...a, timestampUnix: 1_795_435_260 };
    const old = { ...b, timestampUnix: undefined };
    const list = normalizeUsageList([later, old]);
    expect(list.map((u) => u.at)).toEqual([1_795_435_200_000, 1_795_435_260_000]);
  });

  it("leaves out and counts a sample whose cpu share or time is unreadable or out of range", () => {
    const invalid = new InvalidValues();
    const good = fixture.sandboxes.i1ptg5oe0bqyj7ke5wqzb as Record<string, unknown>;
    const m = normalizeUsageMap(
      {
        sandboxes: {
          lots: { ...good, cpuUsedPct: "lots" },
          negative: { ...good, cpuUsedPct: -1 },
          huge: { ...good, cpuUsedPct: 1e308 },
          hex: { ...good, cpuUsedPct: "0x10" },
          never: { ...good, timestampUnix: 1e308 },
          text: "not a sample",
          ok: { ...good, cpuUsedPct: "1.5e1" },
        },
      },
      invalid,
    );
    expect([...m.keys()]).toEqual(["ok"]);
    expect(m.get("ok")?.cpuPct).toBe(15);
    expect(invalid.entries()).toEqual([
      { resource: "usage", field: "cpu_used_pct", count: 4 },
      { resource: "usage", field: "timestamp", count: 1 },
      { resource: "usage", field: "record", count: 1 },
    ]);
  });

  it("drops an optional field out of range from a sample it keeps, and counts it", () => {
    const invalid = new InvalidValues();
    const good = fixture.sandboxes.i1ptg5oe0bqyj7ke5wqzb as Record<string, unknown>;
    const [u] = normalizeUsageList(
      [{ ...good, memUsed: -5, diskTotal: 1e308, cpuCount: "0x2" }],
      invalid,
    );
    expect(u).toMatchObject({ cpuPct: 1.25, memTotalBytes: 536_870_912 });
    expect(u?.memUsedBytes).toBeUndefined();
    expect(u?.diskTotalBytes).toBeUndefined();
    expect(u?.cpuCount).toBeUndefined();
    expect(invalid.entries().map((c) => c.field)).toEqual(["cpu_count", "mem_used", "disk_total"]);
  });

  it("fails a body that is no map or list of samples", () => {
    expect(() => normalizeUsageMap({})).toThrow(/body\.sandboxes/);
    expect(() => normalizeUsageList({})).toThrow(/a list of samples/);
  });
});
