// Usage samples pinned to E2B's published SandboxMetric / SandboxesWithMetrics schemas
// (spec/openapi.yml of e2b-dev/infra), written by hand from the document, not from the simulator.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
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

  it("names the field of a sample it cannot read", () => {
    expect(() => normalizeUsageMap({ sandboxes: { x: { cpuUsedPct: "lots" } } })).toThrow(
      /sandboxes\.x\.cpuUsedPct/,
    );
    expect(() =>
      normalizeUsageMap({ sandboxes: { x: { cpuUsedPct: -1, timestampUnix: 1 } } }),
    ).toThrow(/0 or more/);
    expect(() => normalizeUsageMap({})).toThrow(/body\.sandboxes/);
    expect(() => normalizeUsageList({})).toThrow(/a list of samples/);
  });
});
