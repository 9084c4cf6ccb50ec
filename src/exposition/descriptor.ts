// Metric families declared as data, as kube-state-metrics' generators declare theirs: the name, HELP,
// type and label names of each family, and what the reference (docs/metrics.md) says of when it
// appears. A module builds its families from its descriptors, so the two cannot part; the catalog
// lists them all and `npm run docs:metrics` writes the reference from that list alone.
import { fieldMetric } from "./naming.js";
import { Family } from "./text.js";

/** Types of the families the exporter writes. */
export type FamilyType = "gauge" | "counter" | "histogram";

/** The platform flavors (config `platform.flavor`). */
export type Flavor = "sandboxapi" | "e2b";

/**
 * A label: a name every series carries, or one that appears only `with` something on (a setting,
 * a flavor), worded as the reference prints it after "with".
 */
export type LabelDescriptor = string | { readonly name: string; readonly with: string };

/** A numeric field the reference lists as a family of a generic descriptor. */
export interface FieldExample {
  /** The field's key as normalized (snake_case), as the HELP names it. */
  readonly field: string;
  /** The only flavor whose records give it; none: both. */
  readonly flavor?: Flavor;
  /** Labels this field's family carries beside the descriptor's. */
  readonly labels?: readonly LabelDescriptor[];
}

/** One metric family. */
export interface FamilyDescriptor<T extends FamilyType = FamilyType> {
  /**
   * After the namespace prefix (`sandboxes` is `<ns>_sandboxes`); a counter's ends in `_total`. A
   * generic family's holds `{metric}`, the metric suffix of a platform field.
   */
  readonly name: string;
  readonly type: T;
  /** HELP; `{name}` placeholders are filled by the module (`vars` holds what the reference shows). */
  readonly help: string;
  /** Label names in exposition order. */
  readonly labels: readonly LabelDescriptor[];
  /** What turns it on, as the reference words it (see `setting`); none: always exported. */
  readonly on?: string;
  /** The only flavor it appears on; none: both. */
  readonly flavor?: Flavor;
  /** Named without the namespace (prom-client's process_* families). */
  readonly bare?: boolean;
  /** The value of each HELP placeholder the reference shows (the defaults). */
  readonly vars?: Readonly<Record<string, string>>;
  /**
   * Another writer of a family the reference lists under another descriptor (E2B's cluster
   * families summed from its nodes): same name, other HELP; left out of the reference.
   */
  readonly variant?: boolean;
  /**
   * A family per numeric field of a platform record (name with `{metric}`, HELP with `{field}`):
   * the fields the reference lists, the ones the built-in simulator's records give.
   */
  readonly fields?: readonly FieldExample[];
}

/** What a descriptor may say beyond its name, help and labels. */
export type DescriptorExtras = Omit<FamilyDescriptor, "name" | "type" | "help" | "labels">;

/** How the reference names a setting: its dotted path in backticks. */
export function setting(path: string): string {
  return `\`${path}\``;
}

/** With several teams (platform.teams) every team-scoped family gains `team`. */
export const WITH_TEAMS = "`platform.teams` (two or more)";
/** A sharded exporter (shard.total above 1) labels its sandbox aggregates with its shard. */
export const WITH_SHARDS = "`shard.total` above 1";
/** What the E2B flavor alone adds. */
export const E2B_FLAVOR = "the E2B flavor";
/** The `team` label several teams add. */
export const TEAM_LABEL: LabelDescriptor = Object.freeze({ name: "team", with: WITH_TEAMS });

function declare<T extends FamilyType>(
  type: T,
  name: string,
  help: string,
  labels: readonly LabelDescriptor[],
  more: DescriptorExtras,
): FamilyDescriptor<T> {
  return Object.freeze({ ...more, name, type, help, labels: Object.freeze([...labels]) });
}

/** A gauge family's descriptor. */
export function gauge(
  name: string,
  help: string,
  labels: readonly LabelDescriptor[] = [],
  more: DescriptorExtras = {},
): FamilyDescriptor<"gauge"> {
  return declare("gauge", name, help, labels, more);
}

/** A counter family's descriptor; `name` ends in `_total`. */
export function counter(
  name: string,
  help: string,
  labels: readonly LabelDescriptor[] = [],
  more: DescriptorExtras = {},
): FamilyDescriptor<"counter"> {
  if (!name.endsWith("_total")) throw new Error(`counter ${name}: the name must end in _total`);
  return declare("counter", name, help, labels, more);
}

/** A histogram family's descriptor. */
export function histogram(
  name: string,
  help: string,
  labels: readonly LabelDescriptor[] = [],
  more: DescriptorExtras = {},
): FamilyDescriptor<"histogram"> {
  return declare("histogram", name, help, labels, more);
}

/** The family's name in the exposition: `<ns>_<name>` (a counter's with `_total`). */
export function metricName(ns: string, d: FamilyDescriptor): string {
  return d.bare ? d.name : `${ns}_${d.name}`;
}

/** The HELP with its placeholders filled from `vars` (default: the ones the reference shows). */
export function helpOf(d: FamilyDescriptor, vars?: Readonly<Record<string, string>>): string {
  if (!d.help.includes("{")) return d.help;
  const values = { ...d.vars, ...vars };
  return d.help.replace(/\{(\w+)\}/g, (m, key: string) => values[key] ?? m);
}

/** Label names every series carries, in order (the ones a setting adds are added where it is). */
export function labelNames(d: FamilyDescriptor): string[] {
  return d.labels.flatMap((l) => (typeof l === "string" ? [l] : []));
}

/**
 * Name, help and label names of a prom-client metric of the descriptor; `L` is the label names'
 * type the caller uses (the descriptor holds them as strings; the survey test checks them).
 */
export function metricOptions<L extends string = string>(
  ns: string,
  d: FamilyDescriptor,
  vars?: Readonly<Record<string, string>>,
): { name: string; help: string; labelNames: L[] } {
  return { name: metricName(ns, d), help: helpOf(d, vars), labelNames: labelNames(d) as L[] };
}

/** A hand-written family of the descriptor: named without `_total`, which its counter samples get. */
export function family(
  ns: string,
  d: FamilyDescriptor<"gauge" | "counter">,
  vars?: Readonly<Record<string, string>>,
): Family {
  const name = metricName(ns, d);
  return new Family(
    d.type === "counter" ? name.slice(0, -"_total".length) : name,
    d.type,
    helpOf(d, vars),
  );
}

/** The family of one platform field of a generic descriptor (`{metric}` and `{field}` filled). */
export function fieldFamily(
  ns: string,
  d: FamilyDescriptor<"gauge">,
  field: string,
  metric: string,
): Family {
  return family(ns, { ...d, name: d.name.replace("{metric}", metric) }, { field });
}

/**
 * The families a generic descriptor's listed fields give (as the reference lists them), or the
 * descriptor itself when it is not generic.
 */
export function instances(d: FamilyDescriptor): FamilyDescriptor[] {
  if (!d.fields) return [d];
  return d.fields.map((f) => {
    const { fields: _, ...rest } = d;
    const metric = fieldMetric(f.field)?.suffix ?? f.field;
    return {
      ...rest,
      name: d.name.replace("{metric}", metric),
      help: helpOf(d, { field: f.field }),
      labels: [...d.labels, ...(f.labels ?? [])],
      ...(f.flavor ? { flavor: f.flavor } : {}),
    };
  });
}
