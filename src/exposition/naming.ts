// Metric and label names for data whose keys come from the platform: snake_case, base units,
// and nothing `promtool check metrics` rejects (reserved suffixes, unit abbreviations, type names).

/** How a numeric field becomes a metric: name suffix and the factor to base units. */
export interface FieldMetric {
  suffix: string;
  /** value * mul / div is the value in base units. */
  mul: number;
  div: number;
}

const MIB = 1_048_576;

/** Unit words -> base unit word, multiplier, divisor. Memory units are binary, as memoryMB is. */
const UNITS: Record<string, [string, number, number]> = {
  b: ["bytes", 1, 1],
  kb: ["bytes", 1024, 1],
  kib: ["bytes", 1024, 1],
  kilobytes: ["bytes", 1024, 1],
  kibibytes: ["bytes", 1024, 1],
  mb: ["bytes", MIB, 1],
  mib: ["bytes", MIB, 1],
  megabytes: ["bytes", MIB, 1],
  mebibytes: ["bytes", MIB, 1],
  gb: ["bytes", 1024 * MIB, 1],
  gib: ["bytes", 1024 * MIB, 1],
  gigabytes: ["bytes", 1024 * MIB, 1],
  gibibytes: ["bytes", 1024 * MIB, 1],
  tb: ["bytes", MIB * MIB, 1],
  tib: ["bytes", MIB * MIB, 1],
  terabytes: ["bytes", MIB * MIB, 1],
  bits: ["bytes", 1, 8],
  s: ["seconds", 1, 1],
  sec: ["seconds", 1, 1],
  secs: ["seconds", 1, 1],
  ms: ["seconds", 1, 1_000],
  msec: ["seconds", 1, 1_000],
  millis: ["seconds", 1, 1_000],
  milliseconds: ["seconds", 1, 1_000],
  us: ["seconds", 1, 1_000_000],
  usec: ["seconds", 1, 1_000_000],
  microseconds: ["seconds", 1, 1_000_000],
  ns: ["seconds", 1, 1_000_000_000],
  nanoseconds: ["seconds", 1, 1_000_000_000],
  minutes: ["seconds", 60, 1],
  h: ["seconds", 3_600, 1],
  hours: ["seconds", 3_600, 1],
  d: ["seconds", 86_400, 1],
  days: ["seconds", 86_400, 1],
  weeks: ["seconds", 604_800, 1],
};

/** Metric type names must not appear as words of a name. */
const TYPE_WORDS: Record<string, string> = {
  counter: "counters",
  gauge: "gauges",
  histogram: "histograms",
  summary: "summaries",
};

/** Endings the formats reserve for counters, histograms, summaries and info metrics. */
const RESERVED_LAST = new Set(["total", "sum", "bucket", "info", "created"]);

/** Lower-case snake_case words of a key: camelCase split, anything else a separator. */
function words(key: string): string[] {
  const out = key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
  // "CPUs" snake-cases to "cp_us" and "VMs" to "v_ms": rejoin, or they read as micro/milliseconds.
  for (let i = out.length - 1; i > 0; i--) {
    const w = out[i] as string;
    const prev = out[i - 1] as string;
    if (w.length === 2 && w.endsWith("s") && prev.length <= 2 && /^[a-z]+$/.test(prev)) {
      out.splice(i - 1, 2, `${prev}${w}`);
      i--;
    }
  }
  return out;
}

function plural(word: string): string {
  if (word.endsWith("s") || word.endsWith("ing") || word.endsWith("ed")) return word;
  if (/(x|ch|sh)$/.test(word)) return `${word}es`;
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`;
  return `${word}s`;
}

/** Metric suffix and unit factor of a numeric field; undefined when the key has no usable word. */
export function fieldMetric(field: string): FieldMetric | undefined {
  const ws = words(field);
  if (ws.length === 0) return undefined;
  let mul = 1;
  let div = 1;
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i] as string;
    // A lone letter is a unit only at the end ("ttl_h"), not inside a name ("plan_b_count").
    const unit = w.length > 1 || i === ws.length - 1 ? UNITS[w] : undefined;
    if (unit) {
      ws[i] = unit[0];
      mul *= unit[1];
      div *= unit[2];
    } else if (TYPE_WORDS[w]) ws[i] = TYPE_WORDS[w] as string;
  }
  const last = ws[ws.length - 1] as string;
  if (last === "count") {
    ws.pop();
    if (ws.length === 0) ws.push("count", "value");
    else ws.push(plural(ws.pop() as string));
  } else if (RESERVED_LAST.has(last)) ws.push("value");
  return { suffix: ws.join("_"), mul, div };
}

/**
 * Unique metric suffixes for a set of field names. Fields already spelled as their metric claim
 * their name first; a field whose name is taken (or reserved for a fixed family) is left out,
 * because two families of one name would make the whole scrape invalid.
 */
export function fieldMetrics(
  fields: Iterable<string>,
  reserved: ReadonlySet<string>,
): { metrics: Map<string, FieldMetric>; skipped: string[] } {
  const candidates: Array<[string, FieldMetric]> = [];
  for (const f of new Set(fields)) {
    const m = fieldMetric(f);
    if (m) candidates.push([f, m]);
  }
  // A field already named as its metric (memory_bytes) wins over one renamed to it (memory_mb).
  const renamed = (f: string, m: FieldMetric): number => (m.suffix === words(f).join("_") ? 0 : 1);
  candidates.sort(
    ([fa, a], [fb, b]) => renamed(fa, a) - renamed(fb, b) || (fa < fb ? -1 : fa > fb ? 1 : 0),
  );
  const taken = new Set(reserved);
  const metrics = new Map<string, FieldMetric>();
  const skipped: string[] = [];
  for (const [f, m] of candidates) {
    if (taken.has(m.suffix)) {
      skipped.push(f);
      continue;
    }
    taken.add(m.suffix);
    metrics.set(f, m);
  }
  for (const f of fields) if (!metrics.has(f) && !skipped.includes(f)) skipped.push(f);
  return { metrics, skipped };
}

/** A valid, lint-clean label name for a key: snake_case, never starting with `__` or a digit. */
export function labelName(key: string): string {
  const name = words(key).join("_");
  if (name === "") return "key";
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

/** Label names that only histograms and summaries may use. */
const FORMAT_LABELS = ["le", "quantile"];

/**
 * Label names for extra keys beside fixed labels: a clash gets `prefix`, a second key mapping to
 * the same name is left out. Returns [key, label name] pairs in input order, and the skipped keys.
 */
export function extraLabelNames(
  keys: readonly string[],
  fixed: readonly string[],
  prefix: string,
): { pairs: Array<[string, string]>; skipped: string[] } {
  const clash = new Set([...fixed, ...FORMAT_LABELS]);
  const used = new Set(fixed);
  const pairs: Array<[string, string]> = [];
  const skipped: string[] = [];
  for (const key of keys) {
    let name = labelName(key);
    if (clash.has(name)) name = `${prefix}${name}`;
    if (used.has(name)) {
      skipped.push(key);
      continue;
    }
    used.add(name);
    pairs.push([key, name]);
  }
  return { pairs, skipped };
}
