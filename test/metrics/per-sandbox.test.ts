import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { noGuard } from "../../src/exposition/value-guard.js";
import { PerSandboxSeries } from "../../src/metrics/per-sandbox.js";
import type { Sandbox, SandboxUsage } from "../../src/platform/types.js";
import { sandbox, T0 } from "./fixtures.js";

const OPTIONS = {
  ns: "sandbox",
  metadataLabels: [
    ["team", "team"],
    ["env", "env"],
  ] as Array<[string, string]>,
  maxSeries: 1_000,
};

const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString("utf8");

/** What a renderer that never saw an earlier walk produces: the reference for the cache. */
function fresh(
  list: readonly Sandbox[],
  maxSeries = OPTIONS.maxSeries,
  usage?: ReadonlyMap<string, SandboxUsage>,
): string {
  return text(
    new PerSandboxSeries({ ...OPTIONS, maxSeries }).render(list, noGuard(), usage).chunks,
  );
}

/** A usage sample: `cpuPct` percent of 2 CPUs, and the bytes given. */
function usage(cpuPct: number, memUsedBytes?: number, diskUsedBytes?: number): SandboxUsage {
  return {
    at: T0,
    cpuPct,
    cpuCount: 2,
    memUsedBytes,
    memTotalBytes: undefined,
    diskUsedBytes,
    diskTotalBytes: undefined,
  };
}

const samplesOf = (out: { chunks: Buffer[] }) =>
  text(out.chunks)
    .split("\n")
    .filter((l) => /^sandbox_sandbox_\w+_used_/.test(l));

describe("PerSandboxSeries", () => {
  it("writes the five families, one line per sandbox, leaving out absent fields", () => {
    const out = new PerSandboxSeries(OPTIONS).render([
      sandbox("a", { metadata: { team: "ml" }, endAt: T0 + 300_500 }),
      sandbox("b", { cpuCount: undefined, memoryMB: undefined, startedAt: undefined }),
    ]);
    expect(out.written).toBe(2);
    expect(out.dropped).toBe(0);
    expect(
      text(out.chunks)
        .split("\n")
        .filter((l) => l && !l.startsWith("#")),
    ).toEqual([
      'sandbox_sandbox_info{sandbox_id="a",template="base",state="running",team="ml",env=""} 1',
      'sandbox_sandbox_info{sandbox_id="b",template="base",state="running",team="",env=""} 1',
      'sandbox_sandbox_start_time_seconds{sandbox_id="a"} 1789999940',
      'sandbox_sandbox_end_timestamp_seconds{sandbox_id="a"} 1790000300.5',
      'sandbox_sandbox_cpus{sandbox_id="a"} 2',
      'sandbox_sandbox_memory_bytes{sandbox_id="a"} 536870912',
    ]);
  });

  it("leaves out families without samples, headers included", () => {
    const out = new PerSandboxSeries(OPTIONS).render([
      sandbox("a", { cpuCount: undefined, memoryMB: undefined, startedAt: undefined }),
    ]);
    expect(out.chunks).toHaveLength(1);
    expect(new PerSandboxSeries(OPTIONS).render([]).chunks).toEqual([]);
  });

  it("re-renders only what changed: unchanged sandboxes keep their bytes, vanished ones go", () => {
    const p = new PerSandboxSeries(OPTIONS);
    const first = [sandbox("a"), sandbox("b"), sandbox("c", { metadata: { env: "dev" } })];
    p.render(first);
    const second = [
      sandbox("a"),
      sandbox("c", { metadata: { env: "prod" } }),
      sandbox("d", { state: "paused" }),
    ];
    const out = text(p.render(second).chunks);
    expect(out).toBe(fresh(second));
    expect(out).not.toContain('sandbox_id="b"');
    expect(out).toContain('sandbox_id="c",template="base",state="running",team="",env="prod"');
  });

  it("writes one series for an id listed twice in a walk", () => {
    const out = new PerSandboxSeries(OPTIONS).render([
      sandbox("a"),
      sandbox("a", { state: "paused" }),
    ]);
    expect(out.written).toBe(1);
    expect(text(out.chunks).match(/sandbox_sandbox_info\{/g)).toHaveLength(1);
  });

  it("caps series at maxSeries in walk order and counts the rest", () => {
    const list = ["a", "b", "c", "d"].map((id) => sandbox(id));
    const out = new PerSandboxSeries({ ...OPTIONS, maxSeries: 2 }).render(list);
    expect(out).toMatchObject({ written: 2, dropped: 2 });
    expect(text(out.chunks)).toContain('sandbox_id="b"');
    expect(text(out.chunks)).not.toContain('sandbox_id="c"');
  });

  it("writes non-ASCII label values as UTF-8", () => {
    const list = [sandbox("é", { templateId: "tpl-😀", metadata: { team: "ü" } }), sandbox("z")];
    const p = new PerSandboxSeries(OPTIONS);
    p.render(list);
    const out = text(p.render([...list, sandbox("y")]).chunks);
    expect(out).toContain(
      'sandbox_sandbox_info{sandbox_id="é",template="tpl-😀",state="running",team="ü",env=""} 1\n',
    );
    expect(out).toContain(
      'sandbox_sandbox_cpus{sandbox_id="é"} 2\nsandbox_sandbox_cpus{sandbox_id="z"} 2\n',
    );
  });

  it("renders every walk exactly as a fresh renderer would, whatever changes between walks", () => {
    const ids = ["a", "b", "c", "d", "e", "f", "g", 'h"q', "ü"];
    const arbSandbox = fc.record({
      id: fc.constantFrom(...ids),
      templateId: fc.constantFrom("base", "py", ""),
      state: fc.constantFrom("running", "paused"),
      cpuCount: fc.option(fc.constantFrom(1, 2, 0.5), { nil: undefined }),
      memoryMB: fc.option(fc.constantFrom(256, 512), { nil: undefined }),
      startedAt: fc.option(fc.constantFrom(T0, T0 - 1_500), { nil: undefined }),
      endAt: fc.option(fc.constantFrom(T0 + 60_000, T0 + 90_000), { nil: undefined }),
      metadata: fc.record({ team: fc.constantFrom("x", "y\n") }, { requiredKeys: [] }),
      extra: fc.constant({}),
    }) as fc.Arbitrary<Sandbox>;
    fc.assert(
      fc.property(
        fc.array(fc.array(arbSandbox, { maxLength: 12 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 10 }),
        (walks, maxSeries) => {
          const p = new PerSandboxSeries({ ...OPTIONS, maxSeries });
          for (const w of walks) {
            const out = p.render(w);
            expect(text(out.chunks)).toBe(fresh(w, maxSeries));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("writes the usage families from samples by id, with no line where a sandbox has no sample or a negative value", () => {
    const samples = new Map([
      ["a", usage(37.5, 268_435_456, 1_073_741_824)],
      ["b", usage(0, -1, undefined)],
      ["gone", usage(50, 1, 1)],
    ]);
    const out = new PerSandboxSeries(OPTIONS).render(
      [sandbox("a"), sandbox("b"), sandbox("c")],
      noGuard(),
      samples,
    );
    expect(samplesOf(out)).toEqual([
      'sandbox_sandbox_cpu_used_ratio{sandbox_id="a"} 0.375',
      'sandbox_sandbox_cpu_used_ratio{sandbox_id="b"} 0',
      'sandbox_sandbox_memory_used_bytes{sandbox_id="a"} 268435456',
      'sandbox_sandbox_disk_used_bytes{sandbox_id="a"} 1073741824',
    ]);
    expect(text(out.chunks)).toContain(
      "# HELP sandbox_sandbox_cpu_used_ratio Share of its CPUs the sandbox uses (cpuUsedPct / 100); no series without a usage sample. Cached from the last read of GET /sandboxes/metrics.\n# TYPE sandbox_sandbox_cpu_used_ratio gauge\n",
    );
    // Without samples (the collector off) the families are not there at all.
    expect(text(new PerSandboxSeries(OPTIONS).render([sandbox("a")]).chunks)).not.toContain(
      "_used_",
    );
  });

  it("gives usage series only to the sandboxes under the series cap", () => {
    const samples = new Map(["a", "b", "c"].map((id) => [id, usage(10, 1, 1)]));
    const out = new PerSandboxSeries({ ...OPTIONS, maxSeries: 2 }).render(
      ["a", "b", "c"].map((id) => sandbox(id)),
      noGuard(),
      samples,
    );
    expect(samplesOf(out).filter((l) => l.includes('"c"'))).toEqual([]);
    expect(samplesOf(out)).toHaveLength(6);
  });

  it("renders every walk with its usage exactly as a fresh renderer would", () => {
    const ids = ["a", "b", "c", "d"];
    const arbSample = fc.record({
      at: fc.constant(T0),
      cpuPct: fc.constantFrom(0, 0.5, 62.5, 100),
      cpuCount: fc.constant(2),
      memUsedBytes: fc.option(fc.constantFrom(1, 1_048_576, -5), { nil: undefined }),
      memTotalBytes: fc.constant(undefined),
      diskUsedBytes: fc.option(fc.constantFrom(7, 2_048), { nil: undefined }),
      diskTotalBytes: fc.constant(undefined),
    }) as fc.Arbitrary<SandboxUsage>;
    const arbWalk = fc.record({
      list: fc.subarray(ids).map((xs) => xs.map((id) => sandbox(id))),
      usage: fc
        .array(fc.tuple(fc.constantFrom(...ids), arbSample), { maxLength: 5 })
        .map((pairs) => new Map(pairs)),
    });
    fc.assert(
      fc.property(fc.array(arbWalk, { minLength: 1, maxLength: 6 }), (walks) => {
        const p = new PerSandboxSeries(OPTIONS);
        for (const w of walks)
          expect(text(p.render(w.list, noGuard(), w.usage).chunks)).toBe(
            fresh(w.list, OPTIONS.maxSeries, w.usage),
          );
      }),
      { numRuns: 200 },
    );
  });

  it("writes an end time that changed, even when nothing else did (an extended timeout)", () => {
    const p = new PerSandboxSeries(OPTIONS);
    p.render([sandbox("a", { endAt: T0 + 60_000 }), sandbox("b", { endAt: T0 + 60_000 })]);
    const out = text(p.render([sandbox("a", { endAt: T0 + 120_000 }), sandbox("b")]).chunks);
    expect(out).toContain('sandbox_sandbox_end_timestamp_seconds{sandbox_id="a"} 1790000120\n');
    expect(out).not.toContain('sandbox_sandbox_end_timestamp_seconds{sandbox_id="b"}');
    expect(out).toContain(
      "# HELP sandbox_sandbox_end_timestamp_seconds Scheduled end time (endAt) of the sandbox, Unix seconds",
    );
  });
});
