// OpenMetrics text of a prom-client registry, written from its JSON. prom-client's own OpenMetrics
// rendering renames counters in place (it strips `_total` from metric.name), which would corrupt
// every later Prometheus-format scrape of the same registry; reading the JSON changes nothing.
import type { Registry } from "prom-client";
import {
  type ExpositionDrops,
  type JsonSample,
  labelText,
  readFamilies,
} from "./registry-families.js";
import { escapeHelp, formatValue } from "./text.js";

const OPENMETRICS_TYPES = new Set(["counter", "gauge", "histogram", "summary"]);

/**
 * The registry's metrics as OpenMetrics 1.0.0 families, without the closing `# EOF`; a family
 * that fails to read, and a non-finite counter sample, are left out and counted in `drops`.
 */
export async function registryAsOpenMetrics(
  registry: Registry,
  drops?: ExpositionDrops,
): Promise<string> {
  let out = "";
  for (const m of await readFamilies(registry, drops)) {
    const type = String(m.type);
    const counter = type === "counter";
    const family = counter ? m.name.replace(/_total$/, "") : m.name;
    out += `# HELP ${family} ${escapeHelp(m.help)}\n# TYPE ${family} ${OPENMETRICS_TYPES.has(type) ? type : "unknown"}\n`;
    for (const v of m.values) {
      const name = v.metricName ?? (counter ? `${family}_total` : m.name);
      // OpenMetrics allows exemplars on counter totals and histogram buckets only.
      const exemplar = counter || name.endsWith("_bucket") ? exemplarText(v.exemplar) : "";
      out += `${name}${labelText(v.labels)} ${formatValue(v.value)}${exemplar}\n`;
    }
  }
  return out;
}

/** ` # {labels} value timestamp`, or "" when there is no exemplar (or it has no labels). */
function exemplarText(e: JsonSample["exemplar"]): string {
  if (!e || e.value === null) return "";
  const labels = labelText(e.labelSet);
  if (!labels) return "";
  const ts = e.timestamp === undefined ? "" : ` ${formatValue(e.timestamp)}`;
  return ` # ${labels} ${formatValue(e.value)}${ts}`;
}
