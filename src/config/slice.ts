// A feature's settings slice: the fields it adds under one top-level config key (zod, with their
// defaults: the only place each default lives) and their environment/flag/--help rows.
import { z } from "zod";

/** How a string from the environment or a flag becomes a value. */
export type SettingKind = "string" | "int" | "number" | "bool" | "list" | "duration";

/** One setting's names in each source. */
export interface Setting {
  path: string;
  env: string;
  flag?: string;
  /** Other spellings of the flag, accepted as well. */
  flagAliases?: readonly string[];
  /** A bool flag that `--no-<flag>` sets false. */
  negatable?: true;
  /** A list flag that may be given more than once; the values add up. */
  repeatable?: true;
  /** The seed client's PascalCase field name, accepted at the top of a config file. */
  seed?: string;
  kind: SettingKind;
  /** What it does, for --help: no default here (--help adds the schema's, per flavor). */
  help: string;
  /** The settings table's longer words (markdown: links, ranges, figures); default `help`. */
  doc?: string;
  /**
   * --help's words for a default the code computes from other settings (`4 poll intervals`), or
   * `unset` where the settled value only stands in for one; the flavors' presets are still added.
   */
  shownDefault?: string;
}

/** The prefix of the exporter's own environment variables. */
export const ENV_PREFIX = "SANDBOX_EXPORTER_";

/** A feature's settings. Several slices may add fields to one key (the poll core and each collector). */
export interface SettingsSlice<Shape extends z.ZodRawShape> {
  /** Top-level config key the fields go under: "poll", "platform", ... */
  key: string;
  /** Zod fields WITH their defaults and validation. */
  fields: Shape;
  /** Environment/flag/--help rows of these fields, in --help order; each path is `key.field...`. */
  settings: readonly Setting[];
  /** A rule across fields of the section, checked once it is parsed (zod's superRefine). */
  check?(section: z.output<z.ZodObject<Shape>>, ctx: z.RefinementCtx): void;
}

/** Any slice, whatever its fields. */
// biome-ignore lint/suspicious/noExplicitAny: a slice list holds slices of different shapes.
export type AnySlice = SettingsSlice<any>;

/** Declares a slice; throws (at import) when a row's path is not one of the slice's own fields. */
export function defineSlice<Shape extends z.ZodRawShape>(
  s: SettingsSlice<Shape>,
): SettingsSlice<Shape> {
  for (const row of s.settings) {
    const [key, field] = row.path.split(".");
    if (key !== s.key || field === undefined || !Object.hasOwn(s.fields, field))
      throw new Error(`settings row ${row.path} is not a field of the ${s.key} slice`);
  }
  return s;
}

type Intersect<U> = (U extends unknown ? (u: U) => void : never) extends (u: infer I) => void
  ? I
  : never;
type Flatten<T> = { [K in keyof T]: T[K] };
/** The fields of several slices together. */
export type FieldsOf<S extends readonly AnySlice[]> = Flatten<Intersect<S[number]["fields"]>>;

/** The parsed fields of one slice: what it adds to its section of the configuration. */
export type SectionOf<S extends AnySlice> = z.output<z.ZodObject<S["fields"]>>;

/**
 * The section the slices of one key make together: their fields in one strict object (a field
 * declared by two slices is a mistake, refused at import) and each slice's check.
 */
export function composeSection<const S extends readonly [AnySlice, ...AnySlice[]]>(...slices: S) {
  const fields: Record<string, z.core.$ZodType> = {};
  for (const s of slices) {
    if (s.key !== slices[0].key) throw new Error(`slices of ${slices[0].key} and ${s.key} mixed`);
    for (const [name, schema] of Object.entries(s.fields as z.ZodRawShape)) {
      if (Object.hasOwn(fields, name))
        throw new Error(`setting ${s.key}.${name} is declared by two slices`);
      fields[name] = schema;
    }
  }
  return z.strictObject(fields as FieldsOf<S>).superRefine((section, ctx) => {
    for (const s of slices) s.check?.(section, ctx);
  });
}
