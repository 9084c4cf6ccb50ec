// The family descriptors (src/catalog.ts METRIC_FAMILIES), from which the reference is written,
// against what exporters started on the simulator really export (test/helpers/metric-survey.ts):
// every family a run shows is declared with its name, type, HELP and labels, every declared family
// shows in some run, and what turns each on is the first run that shows it.
import { beforeAll, describe, expect, it } from "vitest";
import { ConfigSchema, METRIC_FAMILIES } from "../../src/catalog.js";
import {
  type FamilyDescriptor,
  instances,
  labelNames,
  metricName,
} from "../../src/exposition/descriptor.js";
import { type FamilyDoc, familyDocs, switchOrder } from "../../tools/docs-metrics.js";
import { parseExposition } from "../helpers/exposition-families.js";
import { type Sighting, type SurveyedFamily, scenarios, survey } from "../helpers/metric-survey.js";

const NS = ConfigSchema.parse({}).metrics.namespace;
/** HELP of the families named after a platform record's numeric field. */
const GENERIC = /^Field \S+ of the (node|template|cluster overview)\./;
/** Every family the descriptors declare, a generic one's per listed field, variants too. */
const DECLARED: readonly FamilyDescriptor[] = METRIC_FAMILIES.flatMap(instances);

let families: SurveyedFamily[] = [];
let sightings: Sighting[] = [];
beforeAll(async () => {
  ({ families, sightings } = await survey());
}, 120_000);

/** The declared HELP as a pattern: each placeholder the module fills (`vars`) matches any text. */
function helpPattern(d: FamilyDescriptor): RegExp {
  let source = d.help.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  for (const key of Object.keys(d.vars ?? {})) source = source.replaceAll(`\\{${key}\\}`, "[^]*");
  return new RegExp(`^${source}$`);
}

/**
 * Why `d` does not declare what `s` showed, or undefined when it does. The labels every series
 * carries must be the run's, in its order; one a setting adds (`team`, written first) need only be
 * declared: the reference lists those after the others, in the order the runs add them.
 */
function mismatch(d: FamilyDescriptor, s: Sighting): string | undefined {
  if (d.type !== s.type) return `type ${s.type}, declared ${d.type}`;
  if (!helpPattern(d).test(s.help)) return `HELP "${s.help}", declared "${d.help}"`;
  if (!s.labelsKnown) return undefined;
  const declared = d.labels.map((l) => (typeof l === "string" ? l : l.name));
  const always = labelNames(d);
  const shown = s.labels.filter((l) => always.includes(l));
  if (shown.join() !== always.join() || !s.labels.every((l) => declared.includes(l)))
    return `labels ${s.labels.join(", ")}, declared ${declared.join(", ")}`;
  return undefined;
}

/** A surveyed family as the reference shows it. */
function asDoc(f: SurveyedFamily): FamilyDoc {
  return {
    name: f.name,
    type: f.type,
    help: f.help,
    labels: f.labels,
    setting: f.setting,
    flavor: f.flavors.size === 1 ? [...f.flavors][0] : undefined,
    generic: GENERIC.test(f.help),
  };
}

const byName = (a: { name: string }, b: { name: string }): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

describe("the metric family descriptors", () => {
  it("are surveyed in the order the reference lists what turns families on", () => {
    const order = switchOrder();
    const ranks = scenarios()
      .filter((s) => !s.checkOnly)
      .map((s) => order.indexOf(s.setting));
    expect(ranks.filter((r) => r < 0)).toEqual([]);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
  });

  it("declare every family a run shows, with its name, type, HELP and label names", () => {
    const problems = new Set<string>();
    for (const s of sightings) {
      const named = DECLARED.filter((d) => metricName(NS, d) === s.name);
      const why = named.map((d) => mismatch(d, s));
      if (named.length === 0) problems.add(`${s.name}: no descriptor`);
      else if (!why.includes(undefined))
        problems.add(`${s.name} (${s.setting ?? "defaults"}, ${s.flavor}): ${why.join("; ")}`);
    }
    expect([...problems]).toEqual([]);
  });

  it("write the reference the runs show: labels, what turns each on, flavors, first HELP", () => {
    expect(families.filter((f) => !f.labelsKnown).map((f) => f.name)).toEqual([]);
    expect([...familyDocs()].sort(byName)).toEqual(families.map(asDoc).sort(byName));
  });

  it("are each shown by some run, the other writers of a family too", () => {
    const unseen = DECLARED.filter(
      (d) => !sightings.some((s) => s.name === metricName(NS, d) && mismatch(d, s) === undefined),
    );
    expect(unseen.map((d) => `${d.name}: ${d.help}`)).toEqual([]);
  });
});

describe("the survey's exposition reader", () => {
  it("reads HELP, TYPE and label names, skipping over quoted values with commas and braces", () => {
    const read = parseExposition(
      [
        "# HELP a_total Things, counted.",
        "# TYPE a_total counter",
        'a_total{x="1,y=\\"}",z="2"} 3',
        "# HELP h Durations.",
        "# TYPE h histogram",
        'h_bucket{phase="exec",le="+Inf"} 1',
        "# HELP g No series.",
        "# TYPE g gauge",
        "",
      ].join("\n"),
    );
    expect([...read.values()]).toEqual([
      {
        name: "a_total",
        type: "counter",
        help: "Things, counted.",
        labels: ["x", "z"],
        labelsKnown: true,
      },
      { name: "h", type: "histogram", help: "Durations.", labels: ["phase"], labelsKnown: true },
      { name: "g", type: "gauge", help: "No series.", labels: [], labelsKnown: false },
    ]);
  });
});
