// The probe's phase and stream histograms carry the probe sandbox's id and module as OpenMetrics
// exemplars: on the bucket each duration fell in, only when OpenMetrics is negotiated.
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registryAsOpenMetrics } from "../../src/exposition/openmetrics.js";
import { ProbeFamilies, ProbeMetrics, probeExemplar } from "../../src/probe/probe-metrics.js";
import type { Prober } from "../../src/probe/prober.js";
import type { ProbeResult } from "../../src/probe/runner.js";
import { type ProbeBed, probeBed, proberFor } from "./setup.js";

/** `name{labels} value # {exemplar labels} value timestamp` of one bucket sample. */
const BUCKET =
  /^(\w+)_bucket\{([^}]*)\} (\S+)(?: # \{sandbox_id="([^"]*)",module="([^"]*)"\} (\S+) (\d+(?:\.\d+)?))?$/;

interface Bucket {
  name: string;
  labels: string;
  le: number;
  count: number;
  exemplar?: { sandboxId: string; module: string; value: number };
}

/** Every bucket sample of `family` in an exposition, with its exemplar if it has one. */
function buckets(text: string, family: string): Bucket[] {
  const out: Bucket[] = [];
  for (const line of text.split("\n")) {
    const m = BUCKET.exec(line);
    if (!m || m[1] !== family) continue;
    const le = /le="([^"]+)"/.exec(m[2] as string)?.[1] as string;
    out.push({
      name: m[1],
      labels: (m[2] as string)
        .split(",")
        .filter((pair) => !pair.startsWith("le="))
        .join(","),
      le: le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le),
      count: Number(m[3]),
      ...(m[4] !== undefined && {
        exemplar: { sandboxId: m[4], module: m[5] as string, value: Number(m[6]) },
      }),
    });
  }
  return out;
}

/** The bucket of `series` whose range (previous bound, le] holds `value`. */
function bucketOf(all: Bucket[], series: string, value: number): Bucket | undefined {
  const own = all.filter((b) => b.labels === series).sort((a, b) => a.le - b.le);
  return own.find((b, i) => value <= b.le && (i === 0 || value > (own[i - 1] as Bucket).le));
}

let bed: ProbeBed;
let prober: Prober;
let registry: Registry;
const created: string[] = [];

beforeAll(async () => {
  bed = await probeBed();
  bed.sim.state.onLifecycle((e) => {
    if (e.type === "created") created.push(e.sandbox.sandboxID);
  });
  ({ prober, registry } = proberFor(bed));
});
afterAll(async () => {
  await prober?.stop();
  await bed?.close();
});

/** The registry's live metrics as /metrics writes them for OpenMetrics. */
async function openMetrics(): Promise<string> {
  return `${await registryAsOpenMetrics(registry)}# EOF\n`;
}

describe("exemplars on the probe histograms", () => {
  it("puts the run's sandbox id and module on the bucket of each phase and stream point, in OpenMetrics only", async () => {
    const result = (await prober.runOnce()) as ProbeResult;
    expect(result.success, JSON.stringify(result.failures)).toBe(true);
    const id = result.sandboxId as string;
    expect(created).toContain(id);

    const om = await openMetrics();
    expect(om.endsWith("\n# EOF\n")).toBe(true);
    expect(om.indexOf("# EOF")).toBe(om.length - "# EOF\n".length);
    const series = `module="default",template="${bed.template}"`;

    const phases = buckets(om, "sandbox_probe_duration_seconds");
    const ran = Object.entries(result.phases);
    expect(ran.map(([p]) => p)).toEqual(
      expect.arrayContaining(["create", "exec", "file_write", "file_read", "terminate"]),
    );
    for (const [phase, seconds] of ran) {
      const at = `${series},phase="${phase}"`;
      const bucket = bucketOf(phases, at, seconds as number);
      expect(bucket?.exemplar, `exemplar of ${phase}`).toEqual({
        sandboxId: id,
        module: "default",
        value: seconds,
      });
      // One observation per phase: no other bucket of the series has an exemplar.
      const others = phases.filter((b) => b.labels === at && b !== bucket && b.exemplar);
      expect(others, phase).toEqual([]);
    }

    const stream = buckets(om, "sandbox_probe_stream_latency_seconds");
    const points = Object.entries(result.stream.points);
    expect(points.length).toBeGreaterThan(0);
    for (const [point, seconds] of points) {
      const bucket = bucketOf(stream, `${series},point="${point}"`, seconds as number);
      expect(bucket?.exemplar, `exemplar of ${point}`).toEqual({
        sandboxId: id,
        module: "default",
        value: seconds,
      });
    }

    // The text format: the same buckets, no exemplar, the id nowhere.
    const text = await registry.metrics();
    expect(text).not.toContain(id);
    expect(text.split("\n").filter((l) => !l.startsWith("#") && l.includes("#"))).toEqual([]);
    const plain = (all: Bucket[]) => all.map((b) => `${b.name}{${b.labels}}${b.le} ${b.count}`);
    expect(plain(buckets(text, "sandbox_probe_duration_seconds"))).toEqual(plain(phases));
    // No other family carries an exemplar.
    const marked = om.split("\n").filter((l) => l.includes(" # {"));
    expect(
      marked.filter((l) => !/^sandbox_probe_(duration|stream_latency)_seconds_bucket\{/.test(l)),
    ).toEqual([]);
  });

  it("moves a bucket's exemplar to the latest run that landed in it", async () => {
    const first = (await prober.runOnce()) as ProbeResult;
    const second = (await prober.runOnce()) as ProbeResult;
    expect(second.sandboxId).not.toBe(first.sandboxId);
    const om = await openMetrics();
    const ids = new Set(
      buckets(om, "sandbox_probe_duration_seconds").flatMap((b) =>
        b.exemplar ? [b.exemplar.sandboxId] : [],
      ),
    );
    // The create of the second run is the latest observation of its bucket.
    const create = bucketOf(
      buckets(om, "sandbox_probe_duration_seconds"),
      `module="default",template="${bed.template}",phase="create"`,
      second.phases.create as number,
    );
    expect(create?.exemplar?.sandboxId).toBe(second.sandboxId);
    expect([...ids].every((i) => created.includes(i))).toBe(true);
  });
});

describe("ProbeMetrics exemplars", () => {
  /** A finished run of one create phase (and terminate), as the runner reports it. */
  function run(sandboxId: string | undefined): ProbeResult {
    return {
      success: true,
      startedAt: 0,
      finishedAt: 1_000,
      durationSeconds: 1,
      phases: { create: 0.3, terminate: 0.02 },
      stream: { points: {}, keepalives: 0 },
      failures: [],
      ...(sandboxId !== undefined && { sandboxId }),
    };
  }

  it("passes the sandbox id through the scrubber before it becomes an exemplar", async () => {
    const registry = new Registry();
    const f = new ProbeFamilies(registry, { namespace: "sandbox" });
    new ProbeMetrics(f, f.idOf("m", "t"), (t) => t.replace("s3cr3t", "[REDACTED]")).record(
      run("sbx-s3cr3t"),
    );
    const om = await registryAsOpenMetrics(registry);
    expect(om).not.toContain("s3cr3t");
    expect(om).toContain('# {sandbox_id="sbx-[REDACTED]",module="m"} 0.3 ');
  });

  it("writes no exemplar for a run that never got a sandbox", async () => {
    const registry = new Registry();
    const f = new ProbeFamilies(registry, { namespace: "sandbox" });
    new ProbeMetrics(f, f.idOf("m", "t")).record(run(undefined));
    const om = await registryAsOpenMetrics(registry);
    expect(om).toContain(
      'sandbox_probe_duration_seconds_bucket{le="0.5",module="m",template="t",phase="create"} 1\n',
    );
    expect(om).not.toContain(" # {");
  });

  it("keeps the label set within OpenMetrics' 128 characters: module cut first, the id only past 112", () => {
    const size = (l: Record<string, string>) =>
      Object.entries(l).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(probeExemplar("sbx-1", "default")).toEqual({ sandbox_id: "sbx-1", module: "default" });
    const id100 = "i".repeat(100);
    expect(probeExemplar(id100, "m".repeat(40))).toEqual({
      sandbox_id: id100,
      module: "m".repeat(12),
    });
    expect(probeExemplar("i".repeat(112), "mod")).toEqual({ sandbox_id: "i".repeat(112) });
    expect(probeExemplar("i".repeat(300), "mod")).toEqual({ sandbox_id: "i".repeat(112) });
    // A character outside the BMP is never split into half a surrogate pair.
    const astral = probeExemplar("i".repeat(99), "😀".repeat(10));
    expect(astral.module).toBe("😀".repeat(6));
    expect(size(astral)).toBeLessThanOrEqual(128);
    for (const l of [astral, probeExemplar("x".repeat(500), "y".repeat(500))])
      expect(size(l)).toBeLessThanOrEqual(128);
    // prom-client accepts every one of them (it throws past 128).
    const registry = new Registry();
    const f = new ProbeFamilies(registry, { namespace: "sandbox" });
    expect(() =>
      new ProbeMetrics(f, f.idOf("m".repeat(200), "t")).record(run("i".repeat(200))),
    ).not.toThrow();
  });
});
