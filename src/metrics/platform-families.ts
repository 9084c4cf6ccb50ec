// Cluster-wide families: /health, /cluster/overview, /nodes, /templates (exported by shard 0 only).
import type { Snapshot } from "../collect/snapshot.js";
import type { PlatformNode, Template } from "../platform/types.js";
import { clusterFromNodes } from "./cluster-from-nodes.js";
import { StateMemory } from "./exposition/state-memory.js";
import { Family, labels } from "./exposition/text.js";
import { noGuard, type ValueGuard } from "./exposition/value-guard.js";
import { extraLabelNames, type FieldMetric, fieldMetrics } from "./naming.js";
import { teamFamilies } from "./team-families.js";
import { TemplateBuildFamilies } from "./template-build-families.js";

/** HELP suffix: these values are the poller's, not read at scrape time. */
function cached(endpoint: string): string {
  return `Cached from the last successful poll of GET ${endpoint}.`;
}

const NODE_RESERVED = new Set(["status", "info"]);
const TEMPLATE_RESERVED = new Set(["status", "info", "replicas", "error"]);

/** Renders the cluster-wide families; remembers status values across snapshots for state-sets. */
export class PlatformFamilies {
  private readonly health = new StateMemory();
  private readonly node = new StateMemory();
  private readonly template = new StateMemory();
  private readonly builds: TemplateBuildFamilies;

  /** The guard of the render in progress. */
  private guard = noGuard();

  constructor(private readonly ns: string) {
    this.builds = new TemplateBuildFamilies(ns);
  }

  /** Families of one snapshot, and the fields left out because their metric name was taken. */
  render(s: Snapshot, guard = noGuard()): { families: Family[]; skipped: string[] } {
    this.guard = guard;
    const families: Family[] = [];
    const skipped: string[] = [];
    if (s.health) families.push(...this.healthFamilies(s.health));
    if (s.overview) {
      const { metrics, skipped: lost } = fieldMetrics(Object.keys(s.overview.numeric), new Set());
      skipped.push(...lost.map((f) => `/cluster/overview ${f}`));
      for (const [field, m] of sorted(metrics)) {
        const value = s.overview.numeric[field] as number;
        families.push(
          new Family(
            `${this.ns}_cluster_${m.suffix}`,
            "gauge",
            `Field ${field} of the cluster overview. ${cached("/cluster/overview")}`,
          ).add("", (value * m.mul) / m.div),
        );
      }
    }
    if (s.nodes) {
      const nodes = uniqueById(s.nodes);
      // No overview (E2B serves none, or it never answered): its capacity families from the nodes.
      if (!s.overview) families.push(...clusterFromNodes(this.ns, nodes));
      families.push(this.statusSet("node", nodes, this.node, "/nodes"));
      families.push(
        ...numericFamilies(this.ns, "node", nodes, NODE_RESERVED, "/nodes", skipped, guard),
      );
      families.push(this.nodeInfo(nodes));
    }
    if (s.templates) {
      const templates = uniqueById(s.templates);
      if (!s.overview)
        families.push(
          new Family(
            `${this.ns}_cluster_templates`,
            "gauge",
            `Templates listed. Derived from GET /templates because the platform serves no GET /cluster/overview. ${cached("/templates")}`,
          ).add("", templates.length),
        );
      families.push(this.statusSet("template", templates, this.template, "/templates"));
      families.push(...this.templateFamilies(templates));
      families.push(
        ...numericFamilies(
          this.ns,
          "template",
          templates,
          TEMPLATE_RESERVED,
          "/templates",
          skipped,
          guard,
        ),
      );
    }
    if (s.templateBuilds) families.push(...this.builds.render(s.templateBuilds, guard));
    if (s.teamMetrics) families.push(...teamFamilies(this.ns, s.teamMetrics, guard));
    return { families, skipped };
  }

  private labels(pairs: ReadonlyArray<readonly [string, string]>): string {
    return labels(pairs, this.guard);
  }

  private healthFamilies(h: NonNullable<Snapshot["health"]>): Family[] {
    const up = new Family(
      `${this.ns}_platform_up`,
      "gauge",
      `1 when the platform answered healthy, else 0. ${cached("/health")}`,
    ).add("", h.up ? 1 : 0);
    if (h.status === undefined) return [up];
    const set = new Family(
      `${this.ns}_platform_health_status`,
      "gauge",
      `Health status as a state-set: 1 for the current value, 0 for others seen. ${cached("/health")}`,
    );
    for (const st of this.health.observe([h.status]))
      set.add(this.labels([["status", st]]), st === h.status ? 1 : 0);
    return [up, set];
  }

  private statusSet(
    kind: "node" | "template",
    items: ReadonlyArray<{ id: string; status: string }>,
    memory: StateMemory,
    endpoint: string,
  ): Family {
    const statuses = memory.observe(items.map((i) => i.status));
    const f = new Family(
      `${this.ns}_${kind}_status`,
      "gauge",
      `Status of the ${kind} as a state-set: 1 for the current value, 0 for others seen. ${cached(endpoint)}`,
    );
    for (const it of items)
      for (const st of statuses)
        f.add(
          this.labels([
            [kind, it.id],
            ["status", st],
          ]),
          st === it.status ? 1 : 0,
        );
    return f;
  }

  private nodeInfo(nodes: readonly PlatformNode[]): Family {
    const info = new Family(
      `${this.ns}_node_info`,
      "gauge",
      `String fields of the node as labels, value 1. ${cached("/nodes")}`,
    );
    for (const n of nodes) {
      const keys = Object.keys(n.info).sort();
      const { pairs } = extraLabelNames(keys, ["node"], "info_");
      const out: Array<[string, string]> = [["node", n.id]];
      for (const [key, name] of pairs) out.push([name, n.info[key] as string]);
      info.add(this.labels(out), 1);
    }
    return info;
  }

  private templateFamilies(templates: readonly Template[]): Family[] {
    const ep = cached("/templates");
    const info = new Family(
      `${this.ns}_template_info`,
      "gauge",
      `Template version, value 1. ${ep}`,
    );
    const replicas = new Family(`${this.ns}_template_replicas`, "gauge", `Replicas. ${ep}`);
    const error = new Family(
      `${this.ns}_template_error`,
      "gauge",
      `1 when the template reports an error, else 0. ${ep}`,
    );
    for (const t of templates) {
      const l = this.labels([["template", t.id]]);
      info.add(
        this.labels([
          ["template", t.id],
          ["version", t.version ?? ""],
        ]),
        1,
      );
      if (t.replicas !== undefined) replicas.add(l, t.replicas);
      error.add(l, t.error ? 1 : 0);
    }
    return [info, replicas, error];
  }
}

function numericFamilies(
  ns: string,
  kind: "node" | "template",
  items: ReadonlyArray<{ id: string; numeric: Record<string, number> }>,
  reserved: ReadonlySet<string>,
  endpoint: string,
  skipped: string[],
  guard: ValueGuard,
): Family[] {
  const { metrics, skipped: lost } = fieldMetrics(
    items.flatMap((i) => Object.keys(i.numeric)),
    reserved,
  );
  skipped.push(...lost.map((f) => `${endpoint} ${f}`));
  const out: Family[] = [];
  for (const [field, m] of sorted(metrics)) {
    const f = new Family(
      `${ns}_${kind}_${m.suffix}`,
      "gauge",
      `Field ${field} of the ${kind}. ${cached(endpoint)}`,
    );
    for (const it of items) {
      const v = it.numeric[field];
      if (v !== undefined) f.add(labels([[kind, it.id]], guard), (v * m.mul) / m.div);
    }
    out.push(f);
  }
  return out;
}

function sorted(metrics: Map<string, FieldMetric>): Array<[string, FieldMetric]> {
  return [...metrics].sort(([, a], [, b]) => (a.suffix < b.suffix ? -1 : 1));
}

/** Drops later records of an id already seen: two would be one duplicated series. */
function uniqueById<T extends { id: string }>(items: readonly T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const i of items) {
    if (seen.has(i.id)) continue;
    seen.add(i.id);
    out.push(i);
  }
  return out;
}
