// OpenMetrics text of a prom-client registry, written from its JSON. prom-client's own OpenMetrics
// rendering renames counters in place (it strips `_total` from metric.name), which would corrupt
// every later Prometheus-format scrape of the same registry; reading the JSON changes nothing.
import type { Registry } from "prom-client";
import { escapeHelp, escapeLabel, formatValue } from "./text.js";

/** An exemplar as prom-client keeps it: labels, the observed value, Unix seconds. */
interface JsonExemplar {
  labelSet: Record<string, string | number | undefined>;
  value: number | null;
  timestamp?: number;
}

/** The runtime shape of a value in prom-client's JSON (histogram samples carry `metricName`). */
interface JsonValue {
  value: number;
  labels: Record<string, string | number | undefined>;
  metricName?: string;
  /** Set on counters and histogram buckets of metrics made with `enableExemplars`. */
  exemplar?: JsonExemplar | null;
}

const OPENMETRICS_TYPES = new Set(["counter", "gauge", "histogram", "summary"]);

/** The registry's metrics as OpenMetrics 1.0.0 families, without the closing `# EOF`. */
export async function registryAsOpenMetrics(registry: Registry): Promise<string> {
  let out = "";
  for (const m of await registry.getMetricsAsJSON()) {
    const type = String(m.type);
    const values = m.values as unknown as JsonValue[];
    const counter = type === "counter";
    const family = counter ? m.name.replace(/_total$/, "") : m.name;
    out += `# HELP ${family} ${escapeHelp(m.help)}\n# TYPE ${family} ${OPENMETRICS_TYPES.has(type) ? type : "unknown"}\n`;
    for (const v of values) {
      const name = v.metricName ?? (counter ? `${family}_total` : m.name);
      // OpenMetrics allows exemplars on counter totals and histogram buckets only.
      const exemplar = counter || name.endsWith("_bucket") ? exemplarText(v.exemplar) : "";
      out += `${name}${labelText(v.labels)} ${formatValue(v.value)}${exemplar}\n`;
    }
  }
  return out;
}

/** ` # {labels} value timestamp`, or "" when there is no exemplar (or it has no labels). */
function exemplarText(e: JsonExemplar | null | undefined): string {
  if (!e || e.value === null) return "";
  const labels = labelText(e.labelSet);
  if (!labels) return "";
  const ts = e.timestamp === undefined ? "" : ` ${formatValue(e.timestamp)}`;
  return ` # ${labels} ${formatValue(e.value)}${ts}`;
}

function labelText(l: JsonValue["labels"]): string {
  let out = "";
  for (const k in l) {
    const v = l[k];
    if (v === undefined) continue;
    const text = typeof v === "number" ? formatValue(v) : v;
    out += `${out ? "," : ""}${k}="${escapeLabel(text)}"`;
  }
  return out ? `{${out}}` : "";
}
