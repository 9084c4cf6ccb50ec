// The --help text, generated from the settings slices: each row's flag and environment variable,
// then its path, description and one default (per flavor where the flavor presets it), wrapped.
import { formatDuration } from "../util/duration.js";
import { isScheduleSpec } from "../util/schedule.js";
import {
  CONFIG_FILE_ENV,
  type Setting,
  type SettingKind,
  type SettingsCatalog,
} from "./settings.js";

/** Widest line of the text: a terminal of 100 columns shows it unwrapped. */
export const HELP_WIDTH = 100;
/** Indent of a row's flag and of its description lines. */
const FLAG_INDENT = "  ";
const TEXT_INDENT = "        ";
/** Room between the flag column and the environment column. */
const GAP = "  ";
/** The flag column is as wide as its longest flag, up to this; a longer flag pushes its env right. */
const MAX_FLAG_COLUMN = 40;

/** The setting that picks the flavor whose presets the other defaults may depend on. */
const FLAVOR_PATH = "platform.flavor";

const PLACEHOLDER: Record<SettingKind, string> = {
  string: " VALUE",
  int: " N",
  number: " NUMBER",
  bool: "[=BOOL]",
  list: " A,B",
  duration: " DURATION",
};

/** One row of the help: what to type, where else to set it, and what it does. */
interface HelpRow {
  flag: string;
  env: string;
  text: string;
  /** `[default: ...]`, kept on one line. */
  default?: string;
}

/** The --help text: every flag of `catalog` with its environment variable, description and default. */
export function helpText(catalog: SettingsCatalog): string {
  const defaults = flavorDefaults(catalog);
  const rows: HelpRow[] = [
    {
      flag: "--config FILE",
      env: CONFIG_FILE_ENV,
      text: "YAML or JSON config file (nested keys as in the paths)",
    },
    ...catalog.settings.map((s) => settingRow(s, defaults)),
    { flag: "--help, -h", env: "", text: "print this text" },
    { flag: "--version", env: "", text: "print the version" },
  ];
  const column = Math.min(MAX_FLAG_COLUMN, Math.max(...rows.map((r) => r.flag.length)));
  return [
    "Usage: sandbox-exporter [--config FILE] [flags]",
    "",
    ...wrap("Precedence: environment variables > flags > config file > defaults.", ""),
    ...wrap(
      "Durations: 30s, 5m, 1h30m, 250ms or milliseconds. Booleans: true/false, 1/0, yes/no, on/off.",
      "",
    ),
    "",
    ...rows.flatMap((r) => renderRow(r, column)),
    "",
  ].join("\n");
}

/** The settled defaults: the base flavor's (the schema's default) first, then each other flavor's. */
export function flavorDefaults(
  catalog: SettingsCatalog,
): Array<{ flavor: string; config: unknown }> {
  const base = catalog.schema.parse({});
  const others = catalog.flavors.filter((f) => f !== base.platform.flavor);
  return [
    { flavor: base.platform.flavor, config: base },
    ...others.flatMap((flavor) => {
      // A flavor whose presets alone do not validate has no defaults to show.
      const parsed = catalog.schema.safeParse({ platform: { flavor } });
      return parsed.success ? [{ flavor, config: parsed.data }] : [];
    }),
  ];
}

function settingRow(s: Setting, defaults: Array<{ flavor: string; config: unknown }>): HelpRow {
  const also = [...(s.flagAliases ?? []), ...(s.negatable ? [`no-${s.flag}`] : [])]
    .map((f) => ` (also --${f})`)
    .join("");
  const shown = defaultOf(s, defaults);
  return {
    flag: s.flag ? `--${s.flag}${PLACEHOLDER[s.kind]}` : "(no flag)",
    env: s.env,
    text: `${s.path}: ${s.help}${also}`,
    ...(shown === undefined ? {} : { default: `[default: ${shown}]` }),
  };
}

/**
 * One default: the base flavor's (or the row's own wording of one computed in code), then
 * `X with --flavor f` for each flavor that presets another; undefined for an unset setting.
 */
export function defaultOf(
  s: Setting,
  defaults: Array<{ flavor: string; config: unknown }>,
): string | undefined {
  const keys = s.path.split(".");
  // The flavor's own row: each flavor is its own value, not a preset of one.
  const flavors = s.path === FLAVOR_PATH ? defaults.slice(0, 1) : defaults;
  const [base, ...others] = flavors.map((d) => ({
    flavor: d.flavor,
    value: getIn(d.config, keys),
  }));
  const baseText = s.shownDefault ?? (isUnset(base?.value) ? undefined : show(s.kind, base?.value));
  const variants = others
    .filter((o) => JSON.stringify(o.value) !== JSON.stringify(base?.value))
    .map((o) => `${show(s.kind, o.value)} with --flavor ${o.flavor}`);
  if (variants.length === 0) return baseText;
  return [baseText ?? "unset", ...variants].join("; ");
}

function isUnset(v: unknown): boolean {
  return v === undefined || v === "" || (Array.isArray(v) && v.length === 0);
}

function show(kind: SettingKind, v: unknown): string {
  if (v === undefined) return "unset";
  if (v === "") return "empty";
  if (kind === "duration" && typeof v === "number") return formatDuration(v);
  if (isScheduleSpec(v)) return v.text;
  if (Array.isArray(v)) return v.length === 0 ? "none" : v.join(",");
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** The flag and its environment variable on one line (the variable below when both do not fit), then the text. */
function renderRow(r: HelpRow, column: number): string[] {
  const head = `${FLAG_INDENT}${r.flag.padEnd(column)}${GAP}${r.env}`.trimEnd();
  const lines =
    r.env === "" || head.length <= HELP_WIDTH
      ? [head]
      : [`${FLAG_INDENT}${r.flag}`, `${TEXT_INDENT}${r.env}`];
  return [...lines, ...wrap(r.text, TEXT_INDENT, r.default)];
}

/** Words of `text` (then `last`, unbroken if it fits) in lines of HELP_WIDTH columns, indented. */
function wrap(text: string, indent: string, last?: string): string[] {
  const room = HELP_WIDTH - indent.length;
  const words = text.split(/\s+/);
  if (last !== undefined) words.push(...(last.length <= room ? [last] : last.split(" ")));
  const out: string[] = [];
  let line = "";
  for (const word of words.flatMap((w) => chunks(w, room))) {
    if (line !== "" && line.length + 1 + word.length > room) {
      out.push(indent + line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") out.push(indent + line);
  return out;
}

/** A word longer than a line, cut into pieces that fit. */
function chunks(word: string, room: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < word.length; i += room) out.push(word.slice(i, i + room));
  return out;
}

function getIn(source: unknown, keys: readonly string[]): unknown {
  let node = source;
  for (const key of keys) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
