// A prom-client registry read one family at a time, so one bad value never fails a scrape: a
// family whose collect throws (prom-client's counter.inc throws on Infinity) is left out, and a
// counter, histogram or summary sample that is NaN or +-Inf, values those never mean, is dropped;
// each is counted. Gauges keep NaN and +-Inf: NaN is how a gauge says "unknown", +Inf a bound.
// Both exposition formats are written from what this reads (openmetrics.ts, registryAsText).
import { Counter, type Registry } from "prom-client";
import { counter, type FamilyDescriptor, metricOptions } from "./descriptor.js";
import { escapeLabel, formatValue } from "./text.js";

export const NONFINITE_DROPPED = counter(
  "exporter_nonfinite_values_dropped_total",
  "Samples left out of a scrape because their value was NaN or +-Inf where the family never means one (counters, histograms, summaries, the cost families), by family: each scrape that leaves one out counts it. The rest of the exposition is served.",
  ["family"],
);
export const RENDER_FAILURES = counter(
  "exporter_family_render_failures_total",
  "Families left out of a scrape because reading them failed (a value prom-client refuses), by family; logged once per family. The rest of the exposition is served.",
  ["family"],
);

/** The exposition's own drop counters. */
export const DROP_FAMILIES = [NONFINITE_DROPPED, RENDER_FAILURES] as const;

/** A sample as prom-client's JSON holds it (histogram samples carry `metricName`). */
export interface JsonSample {
  value: number;
  labels: Record<string, string | number | undefined>;
  /** A histogram's labels other than `le`, as prom-client gives them for the text format. */
  sharedLabels?: Record<string, string | number | undefined>;
  metricName?: string;
  /** Set on counters and histogram buckets of metrics made with `enableExemplars`. */
  exemplar?: {
    labelSet: Record<string, string | number | undefined>;
    value: number | null;
    timestamp?: number;
  } | null;
}

/** One family as read from the registry. */
export interface JsonFamily {
  name: string;
  help: string;
  type: string;
  values: JsonSample[];
}

/** Families whose samples are never NaN or +-Inf. */
const FINITE_TYPES = new Set(["counter", "histogram", "summary"]);

/** What the exposition left out, by family; read by the two counters registerDropFamilies makes. */
export class ExpositionDrops {
  readonly nonFinite = new Map<string, number>();
  readonly failed = new Map<string, number>();
  /** The drop counters' own names: read after every other family, so a scrape shows its drops. */
  readonly last = new Set<string>();

  /** `onFailure` hears of each family that failed to collect (the caller logs it once). */
  constructor(readonly onFailure?: (family: string, err: unknown) => void) {}

  /** `n` samples of `family` left out for a NaN or +-Inf value. */
  dropNonFinite(family: string, n = 1): void {
    if (n > 0) this.nonFinite.set(family, (this.nonFinite.get(family) ?? 0) + n);
  }

  /** `family` failed to collect and was left out of one scrape. */
  familyFailed(family: string, err: unknown): void {
    this.failed.set(family, (this.failed.get(family) ?? 0) + 1);
    this.onFailure?.(family, err);
  }
}

/** Registers the counters of `drops` in `registry`. */
export function registerDropFamilies(registry: Registry, ns: string, drops: ExpositionDrops): void {
  const register = (d: FamilyDescriptor, read: ReadonlyMap<string, number>): void => {
    const options = metricOptions(ns, d);
    drops.last.add(options.name);
    new Counter({
      ...options,
      registers: [registry],
      collect() {
        this.reset();
        for (const [family, n] of read) this.inc({ family }, n);
      },
    });
  };
  register(NONFINITE_DROPPED, drops.nonFinite);
  register(RENDER_FAILURES, drops.failed);
}

/** Reads a registry's families in order, each on its own, leaving out and counting what is bad. */
export async function readFamilies(
  registry: Registry,
  drops: ExpositionDrops = new ExpositionDrops(),
  forText = false,
): Promise<JsonFamily[]> {
  const metrics = registry.getMetricsAsArray() as unknown as {
    name: string;
    get(): Promise<JsonFamily>;
    /** Histograms: the samples without merging `sharedLabels` into `labels` (a copy per sample). */
    getForPromString?(): Promise<JsonFamily>;
  }[];
  const read = (m: (typeof metrics)[number]) =>
    (forText && m.getForPromString ? m.getForPromString() : m.get()).then(
      (f) => finiteOnly(f, drops),
      (err: unknown) => {
        drops.familyFailed(m.name, err);
        return undefined;
      },
    );
  const first = await Promise.all(metrics.map((m) => (drops.last.has(m.name) ? null : read(m))));
  const out: JsonFamily[] = [];
  for (let i = 0; i < metrics.length; i++) {
    const f = first[i] === null ? await read(metrics[i] as (typeof metrics)[number]) : first[i];
    if (f) out.push(f);
  }
  return out;
}

/** The family without the samples its type never means to be NaN or +-Inf (counted). */
function finiteOnly(f: JsonFamily, drops: ExpositionDrops): JsonFamily {
  if (!FINITE_TYPES.has(f.type) || f.values.every((v) => Number.isFinite(v.value))) return f;
  const values = f.values.filter((v) => {
    if (Number.isFinite(v.value)) return true;
    drops.dropNonFinite(f.name);
    return false;
  });
  return { ...f, values };
}

/** The registry as Prometheus text 0.0.4, as prom-client writes it, read by readFamilies. */
export async function registryAsText(registry: Registry, drops?: ExpositionDrops): Promise<string> {
  const parts: string[] = [];
  for (const f of await readFamilies(registry, drops, true)) {
    const name = escapeHelpText(f.name);
    let out = `# HELP ${name} ${escapeHelpText(f.help)}\n# TYPE ${name} ${f.type}`;
    for (const v of f.values)
      out += `\n${v.metricName ?? name}${labelText(v.labels, v.sharedLabels)} ${formatValue(v.value)}`;
    parts.push(out);
  }
  return `${parts.join("\n\n")}\n`;
}

/** prom-client's escaping of names and HELP in the text format: backslash and newline. */
function escapeHelpText(s: string): string {
  return s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** `{a="x",b="1"}` of `l` then `shared`, or "" when there are none; undefined values are left out. */
export function labelText(l: JsonSample["labels"], shared?: JsonSample["labels"]): string {
  const out = pairs(shared, pairs(l, ""));
  return out ? `{${out}}` : "";
}

function pairs(l: JsonSample["labels"] | undefined, before: string): string {
  let out = before;
  for (const k in l) {
    const v = l[k];
    if (v === undefined) continue;
    const text = typeof v === "number" ? formatValue(v) : v;
    out += `${out ? "," : ""}${k}="${escapeLabel(text)}"`;
  }
  return out;
}
