// Cluster-wide families: health, overview, nodes, templates (exported by shard 0 only).
import type { Snapshot } from "../collect/snapshot.js";
import { sanitizeLabelName } from "../platform/normalize.js";
import { Family, labels } from "./text.js";

const CACHED = "Cached from the last poll of";

/** Every status value ever seen per resource kind, so state-sets keep their 0 series. */
export interface SeenStatuses {
  health: Set<string>;
  node: Set<string>;
  template: Set<string>;
}

/** A metric-name suffix for a field; `_count`/`_sum`/`_bucket`/`_total` endings are reserved by the format. */
export function metricSuffix(field: string): string {
  const name = sanitizeLabelName(field).replace(/^_+/, "") || "value";
  const counted = /^(.*?)_?([a-z0-9]+)_count$/.exec(name);
  if (counted) return `${counted[1] ? `${counted[1]}_` : ""}${plural(counted[2] as string)}`;
  return /_(sum|bucket|total|count)$/.test(name) || /^(count|sum|bucket|total)$/.test(name)
    ? `${name}_value`
    : name;
}

const UNIT_SCALE: Array<[RegExp, string, number]> = [
  [/_mb$/, "_bytes", 1_048_576],
  [/_kb$/, "_bytes", 1_024],
  [/_gb$/, "_bytes", 1_073_741_824],
  [/_ms$/, "_seconds", 0.001],
];

/** Metric suffix and value of a numeric field, in base units (memory_mb -> memory_bytes). */
export function metricField(field: string, value: number): [string, number] {
  const name = metricSuffix(field);
  for (const [re, unit, scale] of UNIT_SCALE)
    if (re.test(name)) return [name.replace(re, unit), value * scale];
  return [name, value];
}

function plural(word: string): string {
  return /(s|x|ch|sh)$/.test(word) ? `${word}es` : `${word}s`;
}

/** Families of /health, /cluster/overview, /nodes and /templates. */
export function platformFamilies(s: Snapshot, ns: string, seen: SeenStatuses): Family[] {
  const out: Family[] = [];
  if (s.health) {
    out.push(
      new Family(
        `${ns}_platform_up`,
        "gauge",
        `1 when GET /health answered healthy. ${CACHED} /health.`,
      ).add("", s.health.up ? 1 : 0),
    );
    if (s.health.status !== undefined) {
      seen.health.add(s.health.status);
      const f = new Family(
        `${ns}_platform_health_status`,
        "gauge",
        `Health status text as a state-set. ${CACHED} /health.`,
      );
      for (const st of [...seen.health].sort())
        f.add(labels([["status", st]]), st === s.health.status ? 1 : 0);
      out.push(f);
    }
  }
  if (s.overview) {
    for (const [field, value] of Object.entries(s.overview.numeric).sort(([a], [b]) =>
      a.localeCompare(b),
    )) {
      out.push(
        new Family(
          `${ns}_cluster_${metricSuffix(field)}`,
          "gauge",
          `Field ${field} of the cluster overview. ${CACHED} /cluster/overview.`,
        ).add("", value),
      );
    }
  }
  if (s.nodes) out.push(...resourceFamilies(ns, "node", s.nodes, seen.node, "/nodes"));
  if (s.templates) {
    out.push(...resourceFamilies(ns, "template", s.templates, seen.template, "/templates"));
    const info = new Family(
      `${ns}_template_info`,
      "gauge",
      `Template version, value 1. ${CACHED} /templates.`,
    );
    const replicas = new Family(
      `${ns}_template_replicas`,
      "gauge",
      `Replicas of the template. ${CACHED} /templates.`,
    );
    const error = new Family(
      `${ns}_template_error`,
      "gauge",
      `1 when the template reports an error. ${CACHED} /templates.`,
    );
    for (const t of s.templates) {
      const l = labels([["template", t.id]]);
      info.add(
        labels([
          ["template", t.id],
          ["version", t.version ?? ""],
        ]),
        1,
      );
      if (t.replicas !== undefined) replicas.add(l, t.replicas);
      error.add(l, t.error ? 1 : 0);
    }
    out.push(info, replicas, error);
  }
  return out;
}

const RESERVED = new Set(["status", "info", "replicas", "error"]);

function resourceFamilies(
  ns: string,
  kind: "node" | "template",
  items: ReadonlyArray<{
    id: string;
    status: string;
    numeric: Record<string, number>;
    info: Record<string, string>;
  }>,
  seen: Set<string>,
  endpoint: string,
): Family[] {
  for (const it of items) seen.add(it.status);
  const statuses = [...seen].sort();
  const status = new Family(
    `${ns}_${kind}_status`,
    "gauge",
    `${kind} status as a state-set: 1 for the current value, 0 for the others seen. ${CACHED} ${endpoint}.`,
  );
  const numeric = new Map<string, Family>();
  const info = new Family(
    `${ns}_${kind}_info`,
    "gauge",
    `String fields of the ${kind}, value 1. ${CACHED} ${endpoint}.`,
  );
  for (const it of items) {
    for (const st of statuses)
      status.add(
        labels([
          [kind, it.id],
          ["status", st],
        ]),
        st === it.status ? 1 : 0,
      );
    for (const [field, raw] of Object.entries(it.numeric)) {
      const [suffix, value] = metricField(field, raw);
      if (RESERVED.has(suffix)) continue;
      let f = numeric.get(suffix);
      if (!f) {
        f = new Family(
          `${ns}_${kind}_${suffix}`,
          "gauge",
          `Field ${field} of the ${kind}. ${CACHED} ${endpoint}.`,
        );
        numeric.set(suffix, f);
      }
      f.add(labels([[kind, it.id]]), value);
    }
    if (kind === "node") {
      const pairs: Array<[string, string]> = [[kind, it.id]];
      for (const [k, v] of Object.entries(it.info).sort(([a], [b]) => a.localeCompare(b))) {
        const name = sanitizeLabelName(k);
        if (name !== kind && !name.startsWith("__")) pairs.push([name, v]);
      }
      info.add(labels(pairs), 1);
    }
  }
  return [
    status,
    ...[...numeric.keys()].sort().map((k) => numeric.get(k) as Family),
    ...(kind === "node" ? [info] : []),
  ];
}
