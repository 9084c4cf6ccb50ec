// The cached exposition against a render from scratch, over random sequences of fleet changes.
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SectionWriter } from "../../src/exposition/section-writer.js";
import type { Sandbox } from "../../src/platform/types.js";
import { fnv1a32 } from "../../src/util/shard.js";
import { metricsWith, openMetricsProblems, sandbox, snapshot, T0 } from "./fixtures.js";
import { apply, arbOp, IDS, longRunText, META_LABELS } from "./fleet-ops.js";

function esc(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function num(v: number): string {
  return String(v);
}

/**
 * The per-sandbox families written the plain way: every line built from the walk, no cache. This
 * is the reference the cached renderer must match byte for byte.
 */
function referencePerSandbox(own: readonly Sandbox[], maxSeries: number): string {
  const seen = new Set<string>();
  const rows: Sandbox[] = [];
  for (const s of own) {
    if (seen.has(s.id)) continue;
    seen.add(s.id);
    if (rows.length < maxSeries) rows.push(s);
  }
  const families: Array<[string, (s: Sandbox) => string | undefined]> = [
    [
      "sandbox_sandbox_info",
      (s) =>
        `{sandbox_id="${esc(s.id)}",template="${esc(s.templateId)}",state="${esc(s.state)}"${META_LABELS.map((k) => `,${k}="${esc(s.metadata[k] ?? "")}"`).join("")}} 1`,
    ],
    [
      "sandbox_sandbox_start_time_seconds",
      (s) =>
        s.startedAt === undefined
          ? undefined
          : `{sandbox_id="${esc(s.id)}"} ${num(s.startedAt / 1000)}`,
    ],
    [
      "sandbox_sandbox_end_timestamp_seconds",
      (s) =>
        s.endAt === undefined ? undefined : `{sandbox_id="${esc(s.id)}"} ${num(s.endAt / 1000)}`,
    ],
    [
      "sandbox_sandbox_cpus",
      (s) =>
        s.cpuCount === undefined ? undefined : `{sandbox_id="${esc(s.id)}"} ${num(s.cpuCount)}`,
    ],
    [
      "sandbox_sandbox_memory_bytes",
      (s) =>
        s.memoryMB === undefined
          ? undefined
          : `{sandbox_id="${esc(s.id)}"} ${num(s.memoryMB * 1_048_576)}`,
    ],
  ];
  let out = "";
  for (const [name, line] of families) {
    const lines = rows.map(line).filter((l): l is string => l !== undefined);
    for (const l of lines) out += `${name}${l}\n`;
  }
  return out;
}

/** Families of a text body by name: HELP, TYPE and sample lines, in order. */
function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let name = "";
  for (const line of text.split("\n")) {
    if (line === "" || line === "# EOF") continue;
    const help = /^# HELP (\S+) /.exec(line);
    if (help) name = help[1] as string;
    out.set(name, `${out.get(name) ?? ""}${line}\n`);
  }
  return out;
}

/**
 * A family's lines less the 0 series of groups seen in earlier cycles only (state-memory keeps
 * them, so a state that went away reads 0 rather than vanishing); everything else must match.
 */
function withoutRememberedZeros(body: string, reference: string | undefined): string {
  const ref = new Set((reference ?? "").split("\n"));
  return body
    .split("\n")
    .filter((l) => ref.has(l) || !/ 0$/.test(l))
    .join("\n");
}

const SAMPLE =
  /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,|(?=\})))*\})? (NaN|[+-]Inf|[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)$/;

/** Problems of a text-format body: HELP/TYPE once per family, strict sample lines, no repeated series. */
function textProblems(text: string): string[] {
  const problems: string[] = [];
  if (!text.endsWith("\n")) problems.push("does not end with a newline");
  const declared = new Set<string>();
  const series = new Set<string>();
  let family = "";
  for (const line of text.split("\n").slice(0, -1)) {
    if (line === "") continue; // the text format allows blank lines (prom-client writes them)
    const help = /^# HELP (\S+) /.exec(line);
    const type = /^# TYPE (\S+) (gauge|counter|histogram|summary|untyped)$/.exec(line);
    if (help) {
      family = help[1] as string;
      if (declared.has(family)) problems.push(`${family} declared twice`);
      declared.add(family);
    } else if (type) {
      if (type[1] !== family) problems.push(`TYPE ${type[1]} without its HELP`);
    } else {
      const m = SAMPLE.exec(line);
      if (!m) problems.push(`bad line: ${JSON.stringify(line)}`);
      else if (!(m[1] as string).startsWith(family))
        problems.push(`sample ${m[1]} outside its family ${family}`);
      const key = m ? `${m[1]}${m[2] ?? ""}` : line;
      if (series.has(key)) problems.push(`series twice: ${key}`);
      series.add(key);
    }
  }
  return problems;
}

/**
 * Families whose values depend on history or on the scrape moment, not on the snapshot alone:
 * counters, histograms, and the age of the data at scrape time.
 */
function historical(body: string): boolean {
  return !/^# TYPE \S+ gauge$/m.test(body) || body.includes("_data_age_seconds");
}

describe("the cached exposition", () => {
  it("keeps the offset of text written after copied bytes (copy, text, text)", () => {
    const old = Buffer.from("abcdefgh");
    const w = new SectionWriter(16);
    w.copy(old, 0, 5);
    w.write("XX\n", 3);
    expect(w.position).toBe(8);
    w.write("YY\n", 3);
    expect(w.position).toBe(11);
    w.copy(old, 5, 8);
    expect(w.position).toBe(14);
    expect(w.finish().toString()).toBe("abcdeXX\nYY\nfgh");
  });

  it("equals a render from scratch after every cycle, in every format, whatever the fleet does", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          total: fc.integer({ min: 1, max: 3 }),
          index: fc.integer({ min: 0, max: 2 }),
          maxSeries: fc.integer({ min: 1, max: 16 }),
          perSandbox: fc.boolean(),
        }),
        fc.array(fc.array(arbOp, { maxLength: 8 }), { minLength: 2, maxLength: 10 }),
        fc.array(fc.integer({ min: 0, max: 1_000 }), { minLength: 10, maxLength: 10 }),
        async (o, cycles, shuffles) => {
          const shard = { index: o.index % o.total, total: o.total };
          const options = {
            perSandboxMetrics: o.perSandbox,
            metadataLabels: META_LABELS,
            maxSandboxSeries: o.maxSeries,
            shard,
          };
          const { metrics } = metricsWith(options);
          const fleet = new Map<string, Sandbox>();
          for (const id of IDS.slice(0, 6)) fleet.set(id, sandbox(id));
          for (const [n, ops] of cycles.entries()) {
            for (const op of ops) apply(fleet, op);
            // Walk order varies between cycles, as it does between two walks of a real platform.
            const walk = [...fleet.values()];
            const k = (shuffles[n] ?? 0) % (walk.length || 1);
            const list = [...walk.slice(k), ...walk.slice(0, k)];
            // The walk keeps only this shard's sandboxes (the shard is applied at the list).
            const own = list.filter((s) => fnv1a32(s.id) % shard.total === shard.index);
            const snap = snapshot({ cycle: n + 1, startedAt: T0 + n * 1_000, sandboxes: own });
            metrics.update(snap);
            const fresh = metricsWith(options).metrics;
            fresh.update(snap);
            for (const format of ["prometheus", "openmetrics"] as const) {
              const plain = Buffer.concat((await metrics.render(format, false)).body).toString();
              const zipped = gunzipSync(
                Buffer.concat((await metrics.render(format, true)).body),
              ).toString();
              expect(zipped).toBe(plain);
              const problems =
                format === "openmetrics" ? openMetricsProblems(plain) : textProblems(plain);
              expect(problems).toEqual([]);
              const reference = families(
                Buffer.concat((await fresh.render(format, false)).body).toString(),
              );
              for (const [name, body] of families(plain))
                if (!historical(body))
                  expect(withoutRememberedZeros(body, reference.get(name))).toBe(
                    reference.get(name),
                  );
              if (o.perSandbox) {
                const perSandbox = plain
                  .split("\n")
                  .filter((l) => /^sandbox_sandbox_[a-z_]+\{/.test(l))
                  .map((l) => `${l}\n`)
                  .join("");
                expect(perSandbox).toBe(referencePerSandbox(own, o.maxSeries));
              }
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it("renders per-sandbox series after a long run of changes (promtool reads it: test/promtool/)", async () => {
    expect(await longRunText()).toContain("sandbox_sandbox_info{");
  });
});
