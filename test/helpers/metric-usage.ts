// Checks that the metric names and labels PromQL expressions use exist in an exporter's scrape.
import { analyze, type Selector } from "./promql.js";

/** One expression and where it comes from (for messages). */
export interface ExprSource {
  where: string;
  expr: string;
  /** A label the expression's series must carry (Grafana's label_values(expr, label)). */
  label?: string;
}

/** What one scrape holds: declared family names and the label names seen per sample name. */
export interface Exposition {
  families: Set<string>;
  labels: Map<string, Set<string>>;
}

export interface UsageProblem {
  where: string;
  metric: string;
  label?: string;
  message: string;
}

export interface UsageContext {
  /** Recording rules: record name -> expr. Their names exist; their labels come from `by`. */
  recorded: Map<string, string>;
  /** Series Prometheus makes itself (`up`), with their labels. */
  builtin: Map<string, string[]>;
  /** Labels Prometheus attaches to every scraped series (job, instance). */
  targetLabels: string[];
}

/** Parses Prometheus text exposition; histograms and summaries declare their suffixed names. */
export function parseExposition(text: string): Exposition {
  const families = new Set<string>();
  const labels = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string];
      families.add(name);
      if (kind === "histogram")
        for (const s of ["_bucket", "_sum", "_count"]) families.add(name + s);
      if (kind === "summary") for (const s of ["_sum", "_count"]) families.add(name + s);
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
    if (!name) throw new Error(`not a sample line: ${line}`);
    const set = labels.get(name) ?? new Set<string>();
    labels.set(name, set);
    if (line[name.length] === "{") for (const l of sampleLabels(line, name.length)) set.add(l);
  }
  return { families, labels };
}

/** Label names of the `{...}` at `open`, skipping over quoted values. */
function sampleLabels(line: string, open: number): string[] {
  const out: string[] = [];
  let i = open + 1;
  while (i < line.length && line[i] !== "}") {
    const eq = line.indexOf("=", i);
    out.push(line.slice(i, eq).trim());
    i = eq + 2; // past ="
    while (line[i] !== '"') i += line[i] === "\\" ? 2 : 1;
    i++;
    if (line[i] === ",") i++;
  }
  return out;
}

/** Every metric name, matcher label and by/without label of `sources` missing from the scrape. */
export function checkUsage(
  sources: ExprSource[],
  scrape: Exposition,
  ctx: UsageContext,
): UsageProblem[] {
  const recordedLabels = recordedLabelSets(ctx.recorded);
  const target = new Set(ctx.targetLabels);
  /** The labels a metric's series carry, or undefined when that cannot be known. */
  const labelsOf = (metric: string): Set<string> | undefined => {
    if (ctx.recorded.has(metric)) return recordedLabels(metric);
    const builtin = ctx.builtin.get(metric);
    if (builtin) return new Set(builtin);
    return scrape.labels.get(metric) ?? new Set();
  };
  const exists = (m: string): boolean =>
    ctx.recorded.has(m) || ctx.builtin.has(m) || scrape.families.has(m) || scrape.labels.has(m);
  const onSome = (label: string, inner: Selector[]): boolean => {
    if (target.has(label)) return true;
    const sets = inner.map((s) => labelsOf(s.metric));
    return sets.some((s) => s === undefined || s.has(label));
  };

  const problems: UsageProblem[] = [];
  for (const { where, expr, label } of sources) {
    const use = analyze(expr);
    for (const sel of use.selectors) {
      if (!exists(sel.metric)) {
        problems.push({ where, metric: sel.metric, message: `${sel.metric} is not exported` });
        continue;
      }
      for (const l of sel.labels)
        if (!onSome(l, [sel]))
          problems.push({ where, metric: sel.metric, label: l, message: `no label ${l}` });
    }
    for (const g of use.groupings) {
      const inner = g.inner.filter((s) => exists(s.metric)); // missing ones are reported above
      for (const l of g.labels)
        if (inner.length > 0 && !onSome(l, inner))
          problems.push({
            where,
            metric: inner.map((s) => s.metric).join(" "),
            label: l,
            message: `${g.kind} (${l}): no aggregated series has label ${l}`,
          });
    }
    const present = use.selectors.filter((s) => exists(s.metric));
    if (label && present.length > 0 && !onSome(label, present))
      problems.push({
        where,
        metric: present.map((s) => s.metric).join(" "),
        label,
        message: `label_values: no series has label ${label}`,
      });
  }
  return problems;
}

/** A recording rule's output labels: its `by` labels plus those of the recorded series it reads. */
export function recordedLabelSets(
  recorded: Map<string, string>,
): (name: string) => Set<string> | undefined {
  const memo = new Map<string, Set<string> | undefined>();
  const of = (name: string): Set<string> | undefined => {
    if (memo.has(name)) return memo.get(name);
    memo.set(name, undefined); // cycles stay unknown
    const use = analyze(recorded.get(name) ?? "");
    const out = new Set(use.groupings.filter((g) => g.kind === "by").flatMap((g) => g.labels));
    for (const s of use.selectors)
      if (recorded.has(s.metric)) for (const l of of(s.metric) ?? []) out.add(l);
    const known = out.size > 0 ? out : undefined;
    memo.set(name, known);
    return known;
  };
  return of;
}

/** A dashboard query with Grafana's variables replaced by values PromQL accepts. */
export function concrete(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "1m")
    .replaceAll("$__range", "1h")
    .replaceAll("$__interval", "1m")
    .replace(/\$\{?(\w+)\}?/g, ".*");
}
