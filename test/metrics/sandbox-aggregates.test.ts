import { describe, expect, it } from "vitest";
import { SandboxTable } from "../../src/collect/sandbox-table.js";
import type { Family } from "../../src/exposition/text.js";
import { ValueGuard } from "../../src/exposition/value-guard.js";
import { ENDING_SOON_MS, SandboxAggregates } from "../../src/metrics/sandbox-aggregates.js";
import type { Sandbox, SandboxUsage } from "../../src/platform/types.js";
import { sandbox, T0 } from "./fixtures.js";

const OPTIONS = { ns: "sandbox", runningStates: ["running", "active"], pausedStates: ["paused"] };

function lines(families: Family[], name = "sandbox_sandboxes"): string[] {
  return families
    .map((f) => f.render("prometheus"))
    .join("")
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`));
}

describe("SandboxAggregates", () => {
  it("sums count, CPUs, memory and keeps the oldest start per state x template", () => {
    const f = new SandboxAggregates(OPTIONS).render(
      [
        sandbox("a", { startedAt: T0 - 5_000 }),
        sandbox("b", { startedAt: T0 - 9_000, cpuCount: 4, memoryMB: 1 }),
        sandbox("c", { cpuCount: undefined, memoryMB: undefined, startedAt: undefined }),
        sandbox("d", { templateId: "py", state: "paused", startedAt: undefined }),
      ],
      [],
      T0,
    );
    expect(lines(f)).toEqual([
      'sandbox_sandboxes{state="paused",template="base"} 0',
      'sandbox_sandboxes{state="paused",template="py"} 1',
      'sandbox_sandboxes{state="running",template="base"} 3',
      'sandbox_sandboxes{state="running",template="py"} 0',
    ]);
    expect(lines(f, "sandbox_sandboxes_cpus")).toContain(
      'sandbox_sandboxes_cpus{state="running",template="base"} 6',
    );
    expect(lines(f, "sandbox_sandboxes_memory_bytes")).toContain(
      'sandbox_sandboxes_memory_bytes{state="running",template="base"} 537919488',
    );
    expect(lines(f, "sandbox_sandboxes_oldest_start_time_seconds")).toEqual([
      'sandbox_sandboxes_oldest_start_time_seconds{state="running",template="base"} 1789999991',
    ]);
  });

  it("shows 0 instead of dropping a state x template pair that went away while the template exists", () => {
    const a = new SandboxAggregates(OPTIONS);
    a.render([sandbox("a", { state: "starting" }), sandbox("b", { templateId: "py" })], [], T0);
    const f = a.render(
      [sandbox("b", { templateId: "py" }), sandbox("c", { templateId: "base" })],
      [],
      T0,
    );
    expect(lines(f)).toEqual([
      'sandbox_sandboxes{state="running",template="base"} 1',
      'sandbox_sandboxes{state="running",template="py"} 1',
      'sandbox_sandboxes{state="starting",template="base"} 0',
    ]);
  });

  it("shows every present template with the running and paused states seen this run", () => {
    const a = new SandboxAggregates(OPTIONS);
    const f = a.render(
      [sandbox("a", { state: "paused" }), sandbox("b", { templateId: "py", state: "starting" })],
      ["base", "py", "go"],
      T0,
    );
    expect(lines(f)).toEqual([
      'sandbox_sandboxes{state="paused",template="base"} 1',
      'sandbox_sandboxes{state="paused",template="go"} 0',
      'sandbox_sandboxes{state="paused",template="py"} 0',
      'sandbox_sandboxes{state="starting",template="py"} 1',
    ]);
  });

  it("forgets templates that are gone, and bounds remembered free-text states", () => {
    const a = new SandboxAggregates(OPTIONS);
    a.render([sandbox("a", { templateId: "old" })], [], T0);
    for (let i = 0; i < 100; i++) a.render([sandbox("b", { state: `weird-${i}` })], [], T0);
    const f = a.render([sandbox("b")], [], T0);
    expect(lines(f).some((l) => l.includes('template="old"'))).toBe(false);
    expect(lines(f).length).toBeLessThanOrEqual(33);
    expect(lines(f)).toContain('sandbox_sandboxes{state="running",template="base"} 1');
  });

  it("adds the shard label when given one", () => {
    const f = new SandboxAggregates({ ...OPTIONS, shardLabel: "2" }).render([sandbox("a")], [], T0);
    expect(lines(f)).toEqual(['sandbox_sandboxes{state="running",template="base",shard="2"} 1']);
  });

  it("counts by state x template the sandboxes whose endAt is within the next 5 minutes of the snapshot", () => {
    const at = T0 + 1_000;
    const list: Sandbox[] = [
      sandbox("now", { endAt: at }),
      sandbox("edge", { endAt: at + ENDING_SOON_MS }),
      sandbox("past-edge", { endAt: at + ENDING_SOON_MS + 1 }),
      sandbox("overdue", { endAt: at - 1 }),
      sandbox("no-end"),
      sandbox("paused-soon", { state: "paused", endAt: at + 60_000 }),
      sandbox("py-later", { templateId: "py", endAt: at + 3_600_000 }),
      sandbox("go-unknown", { templateId: "go" }),
    ];
    expect(ENDING_SOON_MS).toBe(300_000);
    const fromRecords = new SandboxAggregates(OPTIONS).render(list, ["go"], at);
    // A group none of whose sandboxes has an endAt (go, and the zero-filled pairs) has no series.
    expect(lines(fromRecords, "sandbox_sandboxes_ending_soon")).toEqual([
      'sandbox_sandboxes_ending_soon{state="paused",template="base"} 1',
      'sandbox_sandboxes_ending_soon{state="running",template="base"} 2',
      'sandbox_sandboxes_ending_soon{state="running",template="py"} 0',
    ]);
    const b = SandboxTable.builder();
    for (const s of list) b.push(s);
    const fromTable = new SandboxAggregates(OPTIONS).render(b.build(), ["go"], at);
    expect(lines(fromTable, "sandbox_sandboxes_ending_soon")).toEqual(
      lines(fromRecords, "sandbox_sandboxes_ending_soon"),
    );
    const help = fromRecords.find((f) => f.name === "sandbox_sandboxes_ending_soon")?.help;
    expect(help).toContain("within the next 5 minutes");
  });

  describe("with usage samples", () => {
    const GIB = 1_073_741_824;
    const sample = (over: Partial<SandboxUsage>): SandboxUsage => ({
      at: T0,
      cpuPct: 50,
      cpuCount: 2,
      memUsedBytes: GIB,
      memTotalBytes: 4 * GIB,
      diskUsedBytes: 3 * GIB,
      diskTotalBytes: 10 * GIB,
      ...over,
    });
    const list = [
      sandbox("a"),
      sandbox("b", { cpuCount: 8 }),
      sandbox("no-sample"),
      sandbox("p", { templateId: "py" }),
      sandbox("q", { state: "paused" }),
    ];
    const usage = new Map<string, SandboxUsage>([
      ["a", sample({ cpuPct: 25 })],
      // No CPU count in the sample: the listed one (8) is used.
      ["b", sample({ cpuPct: 12.5, cpuCount: undefined, diskUsedBytes: undefined })],
      ["not-listed", sample({ cpuPct: 100 })],
    ]);

    it("sums CPUs, memory and disk in use per state x template over the sandboxes with a sample, and says how many", () => {
      const f = new SandboxAggregates(OPTIONS).render(list, [], T0, undefined, usage);
      expect(lines(f, "sandbox_sandboxes_usage_reported")).toEqual([
        'sandbox_sandboxes_usage_reported{state="paused",template="base"} 0',
        'sandbox_sandboxes_usage_reported{state="paused",template="py"} 0',
        'sandbox_sandboxes_usage_reported{state="running",template="base"} 2',
        'sandbox_sandboxes_usage_reported{state="running",template="py"} 0',
      ]);
      // 25 % of 2 CPUs and 12.5 % of 8; groups no sample covers have no sums, not 0.
      expect(lines(f, "sandbox_sandboxes_cpu_used")).toEqual([
        'sandbox_sandboxes_cpu_used{state="running",template="base"} 1.5',
      ]);
      expect(lines(f, "sandbox_sandboxes_memory_used_bytes")).toEqual([
        `sandbox_sandboxes_memory_used_bytes{state="running",template="base"} ${2 * GIB}`,
      ]);
      expect(lines(f, "sandbox_sandboxes_disk_used_bytes")).toEqual([
        `sandbox_sandboxes_disk_used_bytes{state="running",template="base"} ${3 * GIB}`,
      ]);
      const help = f.find((x) => x.name === "sandbox_sandboxes_cpu_used")?.help;
      expect(help).toContain("GET /sandboxes/metrics");
    });

    it("adds no usage family without samples (the collector off)", () => {
      const f = new SandboxAggregates(OPTIONS).render(list, [], T0);
      expect(f.map((x) => x.name).filter((n) => n.includes("used") || n.includes("usage"))).toEqual(
        [],
      );
    });

    it("leaves negative and NaN usage values out of the sums and counts them by field", () => {
      const guard = new ValueGuard(1_024);
      const bad = new Map<string, SandboxUsage>([
        ["a", sample({ memUsedBytes: -1, diskUsedBytes: Number.NaN })],
        ["b", sample({ cpuCount: -4 })],
      ]);
      const f = new SandboxAggregates(OPTIONS).render(list, [], T0, guard, bad);
      expect(lines(f, "sandbox_sandboxes_usage_reported")).toContain(
        'sandbox_sandboxes_usage_reported{state="running",template="base"} 2',
      );
      expect(lines(f, "sandbox_sandboxes_cpu_used")).toEqual([
        'sandbox_sandboxes_cpu_used{state="running",template="base"} 1',
      ]);
      expect(lines(f, "sandbox_sandboxes_memory_used_bytes")).toEqual([
        `sandbox_sandboxes_memory_used_bytes{state="running",template="base"} ${GIB}`,
      ]);
      expect(guard.negative).toMatchObject({ cpu_used: 1, memory_used: 1, disk_used: 1 });
    });

    it("sums a compact table the same as records, and carries the shard label", () => {
      const b = SandboxTable.builder();
      for (const s of list) b.push(s);
      const o = { ...OPTIONS, shardLabel: "1" };
      const fromTable = new SandboxAggregates(o).render(b.build(), [], T0, undefined, usage);
      const fromRecords = new SandboxAggregates(o).render(list, [], T0, undefined, usage);
      for (const name of ["sandbox_sandboxes_usage_reported", "sandbox_sandboxes_cpu_used"])
        expect(lines(fromTable, name)).toEqual(lines(fromRecords, name));
      expect(lines(fromTable, "sandbox_sandboxes_cpu_used")).toEqual([
        'sandbox_sandboxes_cpu_used{state="running",template="base",shard="1"} 1.5',
      ]);
    });
  });
});
