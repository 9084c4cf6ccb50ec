// OpenMetrics text of a prom-client registry, written from its JSON. prom-client's own OpenMetrics
// rendering renames counters in place (it strips `_total` from metric.name), which would corrupt
// every later Prometheus-format scrape of the same registry; reading the JSON changes nothing.
import type { Registry } from "prom-client";
import { escapeHelp, escapeLabel, formatValue } from "./text.js";

/** The runtime shape of a value in prom-client's JSON (histogram samples carry `metricName`). */
interface JsonValue {
  value: number;
  labels: Record<string, string | number | undefined>;
  metricName?: string;
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
      out += `${name}${labelText(v.labels)} ${formatValue(v.value)}\n`;
    }
  }
  return out;
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
