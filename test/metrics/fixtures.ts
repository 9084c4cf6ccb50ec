// Snapshots built by hand for the metrics tests: pure data, no poller, no network.

import { COLLECTORS, ConfigSchema, TICK_COLLECTORS } from "../../src/catalog.js";
import type { CollectorName, CollectorStatus, Snapshot } from "../../src/collect/snapshot.js";
import { ExporterMetrics, type MetricsOptions } from "../../src/metrics/exporter-metrics.js";
import type { Sandbox } from "../../src/platform/types.js";
import { FakeClock } from "../../src/util/clock.js";

const DEFAULT_STATES = ConfigSchema.parse({}).states;
/** The tick collectors a setting turns on (off by default). */
const OPT_IN = new Set<string>(TICK_COLLECTORS.filter((c) => c.optIn).map((c) => c.name));

/** 2026-09-21T... in epoch ms; every fixture time is relative to it. */
export const T0 = 1_790_000_000_000;

/** A sandbox with defaults for everything not given. */
export function sandbox(id: string, over: Partial<Sandbox> = {}): Sandbox {
  return {
    id,
    templateId: "base",
    state: "running",
    cpuCount: 2,
    memoryMB: 512,
    startedAt: T0 - 60_000,
    metadata: {},
    extra: {},
    ...over,
  };
}

/** Collector statuses: all succeeded at T0 (usage, opt-in, skipped) unless overridden. */
export function collectors(
  over: Partial<Record<CollectorName, Partial<CollectorStatus>>> = {},
): Snapshot["collectors"] {
  const out = {} as Record<CollectorName, CollectorStatus>;
  for (const name of COLLECTORS)
    out[name] = {
      name,
      success: true,
      stale: false,
      lastAttemptAt: T0,
      lastSuccessAt: T0,
      durationMs: 250,
      requests: 1,
      // The opt-in ones are off unless a test turns them on.
      ...(name === "usage" || OPT_IN.has(name) ? { skipped: true } : {}),
      ...over[name],
    };
  return out;
}

/** A snapshot holding only `sandboxes` (a complete walk) unless more is given. */
export function snapshot(over: Partial<Snapshot> = {}): Snapshot {
  return {
    cycle: 1,
    startedAt: T0,
    finishedAt: T0 + 1_500,
    sandboxesComplete: true,
    walked: true,
    refreshed: COLLECTORS.filter((n) => n !== "usage"),
    collectors: collectors(),
    ...over,
  };
}

/** An ExporterMetrics on a fake clock, without process_* series (they vary between scrapes). */
export function metricsWith(over: Partial<MetricsOptions> = {}): {
  metrics: ExporterMetrics;
  clock: FakeClock;
  warnings: Array<{ obj: object; msg: string }>;
} {
  const clock = new FakeClock(T0 + 5_000);
  const warnings: Array<{ obj: object; msg: string }> = [];
  const metrics = new ExporterMetrics({
    namespace: "sandbox",
    collectors: TICK_COLLECTORS,
    perSandboxMetrics: false,
    metadataLabels: [],
    maxSandboxSeries: 1_000,
    maxLabelValueLength: 1_024,
    shard: { index: 0, total: 1 },
    // The configuration's defaults, from the one place that has them.
    runningStates: DEFAULT_STATES.running,
    pausedStates: DEFAULT_STATES.paused,
    clock,
    version: "1.2.3",
    processMetrics: false,
    logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
    ...over,
  });
  return { metrics, clock, warnings };
}

/** The whole scrape body as text. */
export async function scrapeText(
  metrics: ExporterMetrics,
  format: "prometheus" | "openmetrics" = "prometheus",
): Promise<string> {
  const r = await metrics.render(format, false);
  return Buffer.concat(r.body).toString("utf8");
}

/** Sample lines (no comments, no blank lines). */
export function sampleLines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
}

/** Sample lines of one family (by exact metric name before `{` or space). */
export function linesOf(text: string, name: string): string[] {
  return sampleLines(text).filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

const OM_SUFFIXES: Record<string, string[]> = {
  gauge: [""],
  counter: ["_total", "_created"],
  histogram: ["_bucket", "_sum", "_count", "_created"],
  summary: ["", "_sum", "_count", "_created"],
  unknown: [""],
};
const OM_SAMPLE =
  /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,|(?=\})))*\})? (\S+)( # \{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,|(?=\})))+\} \S+(?: \S+)?)?$/;

/**
 * Problems of an OpenMetrics 1.0 body (promtool only reads the text format): families declared
 * once with HELP then TYPE, samples named after their family and type, valid labels and values,
 * no blank lines, `# EOF` last.
 */
export function openMetricsProblems(text: string): string[] {
  const problems: string[] = [];
  const eof = text.endsWith("# EOF\n");
  if (!eof) problems.push("does not end with # EOF");
  const lines = (eof ? text.slice(0, -"# EOF\n".length) : text).split("\n").slice(0, -1);
  const declared = new Set<string>();
  let family = "";
  let type = "";
  for (const line of lines) {
    if (line === "" || line.startsWith("# EOF")) problems.push(`unexpected line: "${line}"`);
    const help = /^# HELP (\S+) /.exec(line);
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (help) {
      family = help[1] as string;
      if (declared.has(family)) problems.push(`${family} declared twice`);
      declared.add(family);
      type = "";
    } else if (t) {
      if (t[1] !== family) problems.push(`TYPE ${t[1]} without HELP right before`);
      type = t[2] as string;
      if (!OM_SUFFIXES[type]) problems.push(`unknown type ${type}`);
    } else if (line.startsWith("#")) {
      if (!/^# UNIT /.test(line)) problems.push(`unexpected comment: ${line}`);
    } else if (line !== "") {
      const m = OM_SAMPLE.exec(line);
      if (!m) problems.push(`bad sample: ${line}`);
      else {
        const suffix = (m[1] as string).slice(family.length);
        if (!(m[1] as string).startsWith(family) || !(OM_SUFFIXES[type] ?? []).includes(suffix))
          problems.push(`sample ${m[1]} does not belong to ${type} ${family}`);
        if (!/^(NaN|[+-]Inf|[+-]?\d+(\.\d+)?([eE][+-]?\d+)?)$/.test(m[3] as string))
          problems.push(`bad value: ${line}`);
        // OpenMetrics allows exemplars on counter totals and histogram buckets only.
        if (m[4] !== undefined && !/_(bucket|total)$/.test(m[1] as string))
          problems.push(`exemplar on ${m[1]}: ${line}`);
      }
    }
  }
  return problems;
}
