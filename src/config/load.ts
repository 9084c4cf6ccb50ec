// Builds the Config from defaults, the --config file, flags and the environment (lowest precedence
// first, as the platform contract orders them) and maps every schema problem back to its source.
import type { z } from "zod";
import { isScheduleSpec } from "../util/schedule.js";
import { FILE_PATH, readConfigFile } from "./config-file.js";
import { ConfigError, type ConfigProblem, type Source, showValue } from "./errors.js";
import { parseFlags } from "./flags.js";
import { CONFIG_FILE_ENV, type Config, fromText, type SettingsCatalog } from "./settings.js";
import { closest, knownKeys } from "./suggest.js";

export { ConfigError, type ConfigProblem, type Source } from "./errors.js";
export { redactConfig } from "./redact.js";

/** The loaded configuration and where each of its values came from. */
export interface LoadedConfig {
  config: Config;
  /** Dotted path of every leaf of `config` -> the source of its value. */
  sources: Record<string, Source>;
  help: boolean;
  version: boolean;
}

/** What loadConfig reads; only `readFile` touches the disk, so a reload is just another call. */
export interface ConfigInput {
  argv: string[];
  env: Record<string, string | undefined>;
  readFile?: (path: string) => string;
  /** Report a missing API URL (the daemon needs one; tests and --help may not). */
  requireApi?: boolean;
  /** The machine's host name (a StatefulSet pod's is `name-N`), when the HOSTNAME variable is unset. */
  hostname?: string;
}

/** One value set by a source, remembered to name that source in problems. */
interface Entry {
  keys: string[];
  source: Source;
  origin: string;
}

const RANK: Record<Source, number> = { default: 0, file: 1, flag: 2, env: 3 };
const API_KEY = ["platform", "apiKey"];
const API_KEY_FILE = ["platform", "apiKeyFile"];
const API_URL = ["platform", "apiUrl"];
const ENV_PROXY = ["platform", "envProxy"];
/** Where the probe section says a deprecated key was written (for its one warning). */
const PROBE_DEPRECATED = ["probe", "deprecatedKeys"];
/** Facts the loader derives, never settings: a config file naming one names an unknown key. */
const DERIVED = [ENV_PROXY, PROBE_DEPRECATED];
/** The proxy variables undici's EnvHttpProxyAgent reads (lower case wins, as in curl). */
const PROXY_VARIABLES = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"];

const noFiles = (): string => {
  throw new Error("no file reader was given");
};

/**
 * Loads and validates the configuration `catalog` composes (the catalog's `loadConfig` passes the
 * one there is); throws ConfigError listing every problem found. With --help or --version it never
 * throws: the config is then the defaults if it did not validate.
 */
export function loadSettings(catalog: SettingsCatalog, input: ConfigInput): LoadedConfig {
  const { schema, settings } = catalog;
  const readFile = input.readFile ?? noFiles;
  const flags = parseFlags(input.argv, settings);
  const problems: ConfigProblem[] = [...flags.problems];
  const raw: Record<string, unknown> = {};
  const entries = new Map<string, Entry>();
  const set = (keys: string[], value: unknown, source: Source, origin: string): void => {
    setIn(raw, keys, value);
    entries.set(keys.join("."), { keys, source, origin });
  };

  const configFile = nonEmpty(input.env[CONFIG_FILE_ENV]) ?? flags.configFile;
  if (configFile === "") {
    problems.push({
      path: FILE_PATH,
      source: "flag",
      origin: "--config",
      expected: "a file path",
      received: '""',
    });
  } else if (configFile !== undefined) {
    const file = readConfigFile(configFile, readFile, settings);
    problems.push(...file.problems);
    for (const v of file.values) {
      if (!isDerived(v.keys)) set(v.keys, v.value, "file", v.origin);
      else
        problems.push({
          path: v.path,
          source: "file",
          origin: v.origin,
          expected: unknown(catalog, v.keys),
        });
    }
  }
  for (const { setting, raw: text, origin } of flags.values)
    set(setting.path.split("."), fromText(setting.kind, text), "flag", origin);
  for (const s of settings) {
    const text = nonEmpty(input.env[s.env]);
    if (text !== undefined) set(s.path.split("."), fromText(s.kind, text), "env", s.env);
  }
  const proxyVar = PROXY_VARIABLES.find((name) => nonEmpty(input.env[name]) !== undefined);
  if (proxyVar !== undefined) set(ENV_PROXY, true, "env", proxyVar);
  readKeyFile(raw, entries, readFile, problems, set);
  shardFromHostname(raw, entries, nonEmpty(input.env.HOSTNAME) ?? input.hostname, problems, set);

  const parsed = schema.safeParse(raw, { error: genericExpected });
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push(...problemsOf(catalog, issue, raw, entries, configFile));
  }
  const wantsInfo = flags.help || flags.version;
  const url = getIn(raw, API_URL);
  if (input.requireApi && !wantsInfo && (url === undefined || url === "")) {
    const entry = entries.get(API_URL.join("."));
    problems.push({
      path: API_URL.join("."),
      source: entry?.source ?? "default",
      origin: entry?.origin ?? "",
      expected: "the management API URL (SANDBOX_API_URL, --api-url, or ApiURL in the config file)",
      received: entry ? '""' : undefined,
    });
  }
  if (problems.length > 0 && !wantsInfo) throw new ConfigError(problems);
  const config = parsed.success ? parsed.data : schema.parse({});
  return {
    config,
    sources: parsed.success ? sourcesOf(config, entries) : {},
    help: flags.help,
    version: flags.version,
  };
}

/** apiKeyFile's trimmed content becomes apiKey, unless a higher-precedence source set the key itself. */
function readKeyFile(
  raw: Record<string, unknown>,
  entries: Map<string, Entry>,
  readFile: (path: string) => string,
  problems: ConfigProblem[],
  set: (keys: string[], value: unknown, source: Source, origin: string) => void,
): void {
  const fileEntry = entries.get(API_KEY_FILE.join("."));
  const keyEntry = entries.get(API_KEY.join("."));
  const path = getIn(raw, API_KEY_FILE);
  if (!fileEntry || typeof path !== "string" || path === "") return;
  const problem = (p: Omit<ConfigProblem, "source" | "origin">): void => {
    problems.push({ ...p, source: fileEntry.source, origin: fileEntry.origin });
  };
  if (keyEntry && RANK[keyEntry.source] > RANK[fileEntry.source]) return;
  if (keyEntry && RANK[keyEntry.source] === RANK[fileEntry.source]) {
    problem({
      path: API_KEY_FILE.join("."),
      expected: `either the API key (${keyEntry.origin}) or a key file, not both`,
    });
    return;
  }
  let key: string;
  try {
    key = readFile(path).trim();
  } catch (err) {
    const why = ((err as Error).message ?? String(err)).split("\n")[0] ?? "";
    problem({
      path: API_KEY_FILE.join("."),
      expected: "a readable file",
      received: JSON.stringify(why),
    });
    return;
  }
  if (key === "") {
    problem({
      path: API_KEY_FILE.join("."),
      expected: "a file holding the API key",
      received: `an empty file ${JSON.stringify(path)}`,
    });
    return;
  }
  set(API_KEY, key, fileEntry.source, fileEntry.origin);
}

const SHARD_INDEX = ["shard", "index"];
const SHARD_FROM_HOSTNAME = ["shard", "fromHostname"];
/** A StatefulSet pod's hostname: the set's name, a dash, the pod's ordinal. */
const POD_ORDINAL = /-(\d{1,6})$/;

/**
 * shard.fromHostname: the shard index is the ordinal of the StatefulSet pod's hostname (as
 * kube-state-metrics' auto-sharding reads its pod), so a scale-up is `replicas` plus the total.
 */
function shardFromHostname(
  raw: Record<string, unknown>,
  entries: Map<string, Entry>,
  hostname: string | undefined,
  problems: ConfigProblem[],
  set: (keys: string[], value: unknown, source: Source, origin: string) => void,
): void {
  const entry = entries.get(SHARD_FROM_HOSTNAME.join("."));
  if (!entry || getIn(raw, SHARD_FROM_HOSTNAME) !== true) return;
  const problem = (expected: string, received?: string): void => {
    problems.push({
      path: SHARD_FROM_HOSTNAME.join("."),
      source: entry.source,
      origin: entry.origin,
      expected,
      ...(received !== undefined ? { received } : {}),
    });
  };
  const explicit = entries.get(SHARD_INDEX.join("."));
  if (explicit) {
    problem(`either the shard index (${explicit.origin}) or the hostname's ordinal, not both`);
    return;
  }
  const ordinal = hostname === undefined ? null : POD_ORDINAL.exec(hostname.trim());
  if (!ordinal) {
    problem(
      "a StatefulSet pod's hostname ending in -<ordinal>",
      hostname === undefined ? "no hostname" : JSON.stringify(hostname),
    );
    return;
  }
  set(SHARD_INDEX, Number(ordinal[1]), entry.source, `${entry.origin} (hostname ${hostname})`);
}

/** The "expected" phrase for issues whose schema gives none of its own. */
function genericExpected(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code === "unrecognized_keys") return "a known setting";
  if (issue.code !== "invalid_type") return undefined;
  const nouns: Record<string, string> = {
    object: "a mapping of settings",
    array: "a list",
    boolean: "true or false",
    number: "a number",
    string: "a string",
  };
  return nouns[issue.expected] ?? `a ${issue.expected}`;
}

/** One problem per issue (one per key for unknown keys), naming the source that supplied the value. */
function problemsOf(
  catalog: SettingsCatalog,
  issue: z.core.$ZodIssue,
  raw: Record<string, unknown>,
  entries: Map<string, Entry>,
  file: string | undefined,
): ConfigProblem[] {
  const base = issue.path.map(String);
  const targets = issue.code === "unrecognized_keys" ? issue.keys.map((k) => [...base, k]) : [base];
  return targets.map((keys) => {
    const path = keys.join(".");
    const { source, origin } = originOf(keys, entries, file);
    const expected = issue.code === "unrecognized_keys" ? unknown(catalog, keys) : issue.message;
    const received =
      issue.code === "unrecognized_keys" ? undefined : showValue(path, getIn(raw, keys));
    return { path, source, origin, expected, received };
  });
}

/**
 * The entry that set this value, or the one that set the list or mapping holding it; for a mapping
 * no entry set as a whole (an unknown section), the source that wrote every value inside it.
 */
function originOf(
  keys: string[],
  entries: Map<string, Entry>,
  file?: string,
): { source: Source; origin: string } {
  for (let n = keys.length; n > 0; n--) {
    const entry = entries.get(keys.slice(0, n).join("."));
    if (!entry) continue;
    const rest = keys.slice(n).join(".");
    const deeper =
      entry.source === "file" && rest !== "" ? `${entry.origin}.${rest}` : entry.origin;
    return { source: entry.source, origin: deeper };
  }
  const path = keys.join(".");
  const inside = [...entries.keys()].filter((k) => k.startsWith(`${path}.`));
  const sources = new Set(inside.map((k) => entries.get(k)?.source));
  if (sources.size === 1 && sources.has("file") && file !== undefined)
    return { source: "file", origin: `${file}:${path}` };
  return { source: "default", origin: "" };
}

/** Whether these keys are (or lie inside) a derived fact. */
function isDerived(keys: readonly string[]): boolean {
  return DERIVED.some((d) => d.every((k, i) => keys[i] === k));
}

/** The "expected" phrase for an unknown key, with a hint when a known one is close. */
function unknown(catalog: SettingsCatalog, keys: string[]): string {
  return `a known setting (see --help)${suggestion(catalog, keys)}`;
}

/**
 * `; did you mean poll.schedule?` for a key a few edits from one the schema knows at that place
 * (any depth), or from a seed name at the top; never a derived fact.
 */
function suggestion(catalog: SettingsCatalog, keys: string[]): string {
  const parents = keys.slice(0, -1);
  // At the top, the file also accepts the seed client's names.
  const seeds = catalog.settings.flatMap((s) => (s.seed ? [s.seed] : []));
  const names = [...knownKeys(catalog.schema, parents), ...(parents.length === 0 ? seeds : [])];
  const hit = closest(
    keys.at(-1) ?? "",
    names.filter((n) => !isDerived([...parents, n])),
  );
  return hit ? `; did you mean ${[...parents, hit].join(".")}?` : "";
}

/** Dotted path of every leaf of the config (lists and schedules are leaves) -> its source. */
function sourcesOf(config: Config, entries: Map<string, Entry>): Record<string, Source> {
  const out: Record<string, Source> = {};
  const walk = (node: unknown, keys: string[]): void => {
    if (
      typeof node === "object" &&
      node !== null &&
      !Array.isArray(node) &&
      !isScheduleSpec(node)
    ) {
      for (const [k, v] of Object.entries(node)) walk(v, [...keys, k]);
      return;
    }
    out[keys.join(".")] = originOf(keys, entries).source;
  };
  walk(config, []);
  return out;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

function setIn(target: Record<string, unknown>, keys: string[], value: unknown): void {
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = value;
}

function getIn(source: unknown, keys: readonly string[]): unknown {
  let node = source;
  for (const key of keys) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}
