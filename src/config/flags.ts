// Command-line flags (node:util parseArgs); help.ts turns the same settings table into --help.
import { parseArgs } from "node:util";
import type { ConfigProblem } from "./errors.js";
import type { Setting } from "./settings.js";

/** One setting given on the command line, still as text. */
export interface FlagValue {
  setting: Setting;
  raw: string;
  /** `--page-limit`. */
  origin: string;
}

/** What the command line asked for. */
export interface ParsedFlags {
  values: FlagValue[];
  configFile?: string;
  help: boolean;
  version: boolean;
  problems: ConfigProblem[];
}

const META = ["config", "help", "version"];
const NOT_A_FLAG = "argv";
const KEY_ON_ARGV = "api-key";
/** Stands for the value of a flag followed directly by another flag. */
const MISSING = "\u0000missing";

/**
 * Parses argv against the flags of `settings`, collecting every unknown flag, missing value and
 * stray argument as a problem.
 */
export function parseFlags(argv: readonly string[], settings: readonly Setting[]): ParsedFlags {
  const byFlag = new Map<string, Setting>();
  for (const s of settings)
    for (const flag of [s.flag, ...(s.flagAliases ?? [])]) if (flag) byFlag.set(flag, s);
  /** `--no-<flag>` of a negatable bool setting: sets it false. */
  const negatedFlags = new Map<string, Setting>();
  for (const s of settings) if (s.negatable && s.flag) negatedFlags.set(`no-${s.flag}`, s);
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
    version: { type: "boolean" },
  };
  for (const [flag, s] of byFlag)
    options[flag] = { type: s.kind === "bool" ? "boolean" : "string" };
  for (const flag of negatedFlags.keys()) options[flag] = { type: "boolean" };
  // Non-strict: parseArgs would stop at the first mistake; the tokens let us report them all.
  const { tokens } = parseArgs({
    args: markMissingValues(argv, options),
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const out: ParsedFlags = { values: [], help: false, version: false, problems: [] };
  const problem = (origin: string, expected: string, received?: string): void => {
    out.problems.push({ path: NOT_A_FLAG, source: "flag", origin, expected, received });
  };
  let hideNext = false;
  for (const token of tokens) {
    if (token.kind === "option-terminator") continue;
    if (token.kind === "positional") {
      // The word after an unknown flag is probably its value, and may be a key: never echo it.
      if (hideNext) problem(`argument ${token.index + 1}`, "a flag (see --help)", '"***"');
      else
        problem(`argument ${token.index + 1}`, "a flag (see --help)", JSON.stringify(token.value));
      hideNext = false;
      continue;
    }
    hideNext = false;
    const name = token.name;
    const origin = `--${name}`;
    const negated = negatedFlags.get(name);
    if (negated && token.value === undefined) {
      out.values.push({ setting: negated, raw: "false", origin });
      continue;
    }
    const known = byFlag.get(name);
    if (!known && !META.includes(name)) {
      hideNext = token.value === undefined;
      problem(
        token.rawName,
        name === KEY_ON_ARGV
          ? "no --api-key flag (command lines show in ps); use SANDBOX_API_KEY or --api-key-file"
          : "a known flag (see --help)",
      );
      continue;
    }
    if (name === "help" || name === "version" || known?.kind === "bool") {
      const raw = token.value ?? "true";
      if (name === "help") out.help = true;
      else if (name === "version") out.version = true;
      else if (known) out.values.push({ setting: known, raw, origin });
      continue;
    }
    if (token.value === undefined || token.value === MISSING) {
      problem(origin, `a value after ${origin} (use ${origin}=VALUE for one starting with -)`);
      continue;
    }
    if (name === "config") out.configFile = token.value;
    else if (known?.repeatable) {
      // A repeated list flag adds its values to the ones before it.
      const before = out.values.find((v) => v.setting === known);
      if (before) before.raw = `${before.raw},${token.value}`;
      else out.values.push({ setting: known, raw: token.value, origin });
    } else if (known) out.values.push({ setting: known, raw: token.value, origin });
  }
  return out;
}

/**
 * parseArgs would take `--listen` in `--page-limit --listen :1` as the page limit; mark the
 * value as missing instead so the next flag is read as a flag.
 */
function markMissingValues(
  argv: readonly string[],
  options: Record<string, { type: "string" | "boolean" }>,
): string[] {
  const out = [...argv];
  for (let i = 0; i < out.length - 1; i++) {
    const arg = out[i] as string;
    if (arg === "--") break;
    const takesValue = arg.startsWith("--") && options[arg.slice(2)]?.type === "string";
    if (takesValue && (out[i + 1] as string).startsWith("-")) out[i] = `${arg}=${MISSING}`;
  }
  return out;
}
