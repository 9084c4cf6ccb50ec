// Checks that a dashboard legend names only labels its query's series can carry: `{{team}}` on a
// series without a team label shows an empty name in Grafana.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { concrete, type Exposition, recordedLabelSets, type UsageContext } from "./metric-usage.js";
import { analyze, type Selector } from "./promql.js";

interface Panel {
  title?: string;
  targets?: { expr?: string; legendFormat?: string; refId?: string }[];
  panels?: Panel[];
}

/** One legend label the query's series cannot carry. */
export interface LegendProblem {
  where: string;
  label: string;
  legend: string;
}

/** Every `{{label}}` of the dashboards' legends that no series of its query carries. */
export function legendProblems(
  dashboardsDir: string,
  scrape: Exposition,
  ctx: UsageContext,
): LegendProblem[] {
  const recorded = recordedLabelSets(ctx.recorded);
  const labelsOf = (s: Selector): Set<string> => {
    const own = ctx.recorded.has(s.metric)
      ? recorded(s.metric)
      : (ctx.builtin.get(s.metric) ?? scrape.labels.get(s.metric));
    return new Set([...(own ?? []), ...ctx.targetLabels]);
  };
  const problems: LegendProblem[] = [];
  for (const file of readdirSync(dashboardsDir).filter((f) => f.endsWith(".json"))) {
    const dashboard = JSON.parse(readFileSync(join(dashboardsDir, file), "utf8")) as {
      panels: Panel[];
    };
    const walk = (panels: Panel[]): void => {
      for (const p of panels) {
        for (const t of p.targets ?? []) {
          const legend = t.legendFormat ?? "";
          const wanted = [...legend.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1] ?? "");
          if (!t.expr || wanted.length === 0) continue;
          const carried = resultLabels(concrete(t.expr), labelsOf);
          for (const label of wanted)
            if (!carried.has(label))
              problems.push({ where: `${file} "${p.title}" ${t.refId}`, label, legend });
        }
        walk(p.panels ?? []);
      }
    };
    walk(dashboard.panels);
  }
  return problems;
}

/**
 * Labels some series of `expr` may carry: those of `by` clauses and group_left/right lists, and
 * those of selectors no `by` aggregates, less the labels a `without` around them drops.
 */
function resultLabels(expr: string, labelsOf: (s: Selector) => Set<string>): Set<string> {
  const use = analyze(expr);
  const out = new Set<string>();
  const grouped = new Set<Selector>();
  for (const g of use.groupings) {
    if (g.kind !== "by") continue;
    for (const l of g.labels) out.add(l);
    for (const s of g.inner) grouped.add(s);
  }
  for (const m of expr.matchAll(/group_(?:left|right)\s*\(([^)]*)\)/g))
    for (const l of (m[1] ?? "").split(",")) if (l.trim() !== "") out.add(l.trim());
  for (const s of use.selectors) {
    if (grouped.has(s)) continue;
    const dropped = new Set(
      use.groupings
        .filter((g) => g.kind === "without" && g.inner.includes(s))
        .flatMap((g) => g.labels),
    );
    for (const l of labelsOf(s)) if (!dropped.has(l)) out.add(l);
  }
  return out;
}
