// Builds a Config from defaults, a config file, flags and the environment (that order of precedence, lowest first).
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import { parseDuration } from "../util/duration.js";
import { ExporterError } from "../util/errors.js";
import { type Config, ConfigSchema } from "./schema.js";
import { SETTINGS, type Setting } from "./settings.js";

/** Where a value came from. */
export type Source = "env" | "file" | "flag" | "default";

/** One problem with one setting. */
export interface ConfigProblem {
  path: string;
  source: Source;
  /** The variable, flag or file that supplied the value. */
  origin: string;
  expected: string;
  received?: string;
}

/** Configuration is unusable; `format()` gives one line per problem. */
export class ConfigError extends ExporterError {
  constructor(readonly problems: ConfigProblem[]) {
    super("ERR_CONFIG", problems.map(formatProblem).join("\n"));
  }
  format(): string {
    return this.message;
  }
}

/** The loaded configuration and where each set value came from. */
export interface LoadedConfig {
  config: Config;
  sources: Record<string, Source>;
  help: boolean;
  version: boolean;
}

/** What loadConfig reads; only `readFile` touches the disk. */
export interface ConfigInput {
  argv: string[];
  env: Record<string, string | undefined>;
  readFile?: (path: string) => string;
  /** Fail when no API URL is configured (the daemon needs one; tests may not). */
  requireApi?: boolean;
}

const SECRET_PATHS = new Set(SETTINGS.filter((s) => s.secret).map((s) => s.path));

function formatProblem(p: ConfigProblem): string {
  const shown = p.received === undefined ? "" : `, got ${p.received}`;
  return `${p.path} (${p.source} ${p.origin}): expected ${p.expected}${shown}`;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = value;
}

function getPath(source: unknown, path: string): unknown {
  let node = source;
  for (const key of path.split(".")) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function convert(setting: Setting, raw: string): unknown {
  switch (setting.kind) {
    case "string":
      return raw;
    case "int": {
      if (!/^-?\d+$/.test(raw.trim())) throw new Error("expected an integer");
      return Number(raw);
    }
    case "bool": {
      const v = raw.trim().toLowerCase();
      if (["1", "true", "yes", "on"].includes(v)) return true;
      if (["0", "false", "no", "off", ""].includes(v)) return false;
      throw new Error("expected true or false");
    }
    case "list":
      return raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
    case "duration":
      parseDuration(raw);
      return raw;
  }
}

function flattenLeaves(value: unknown, prefix: string, out: string[]): void {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value))
      flattenLeaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) out.push(prefix);
}

function describe(path: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (SECRET_PATHS.has(path)) return '"***"';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Loads and validates configuration; throws ConfigError listing every problem. */
export function loadConfig(input: ConfigInput): LoadedConfig {
  const problems: ConfigProblem[] = [];
  const raw: Record<string, unknown> = {};
  const sources: Record<string, Source> = {};
  const origins: Record<string, string> = {};
  const assign = (path: string, value: unknown, source: Source, origin: string): void => {
    setPath(raw, path, value);
    sources[path] = source;
    origins[path] = origin;
  };

  const flagOptions: Record<string, { type: "string" | "boolean" }> = {
    config: { type: "string" },
    help: { type: "boolean" },
    version: { type: "boolean" },
  };
  for (const s of SETTINGS) if (s.flag) flagOptions[s.flag] = { type: "string" };
  // Boolean settings may be given bare (--probe) or with a value (--probe=false).
  const argv = input.argv.map((a) => {
    const s = SETTINGS.find((x) => x.kind === "bool" && x.flag && a === `--${x.flag}`);
    return s ? `--${s.flag}=true` : a;
  });
  let flags: Record<string, string | boolean | undefined> = {};
  try {
    flags = parseArgs({
      args: argv,
      options: flagOptions,
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    const msg = (err as Error).message.split("\n")[0] ?? "";
    throw new ConfigError([
      {
        path: "argv",
        source: "flag",
        origin: "command line",
        expected: "a known flag (see --help)",
        received: msg,
      },
    ]);
  }

  // 1. The config file (explicit), with the seed's PascalCase names as aliases.
  const file = typeof flags.config === "string" ? flags.config : undefined;
  if (file) {
    let doc: unknown;
    try {
      const text = (input.readFile ?? (() => ""))(file);
      doc = parseYaml(text) ?? {};
    } catch (err) {
      const msg = (err as Error).message.split("\n")[0] ?? "";
      throw new ConfigError([
        {
          path: "(file)",
          source: "file",
          origin: file,
          expected: "readable YAML or JSON",
          received: msg,
        },
      ]);
    }
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
      throw new ConfigError([
        { path: "(file)", source: "file", origin: file, expected: "a mapping at the top level" },
      ]);
    }
    const obj = { ...(doc as Record<string, unknown>) };
    for (const s of SETTINGS) {
      if (s.seed && s.seed in obj) {
        setPath(obj, s.path, obj[s.seed]);
        delete obj[s.seed];
      }
    }
    const leaves: string[] = [];
    flattenLeaves(obj, "", leaves);
    for (const path of leaves) assign(path, getPath(obj, path), "file", file);
  }

  // 2. Flags (explicit, beat the file), then 3. the environment (beats everything).
  for (const s of SETTINGS) {
    const v = s.flag ? flags[s.flag] : undefined;
    if (typeof v === "string") applyString(s, v, "flag", `--${s.flag}`);
  }
  for (const s of SETTINGS) {
    const v = input.env[s.env];
    if (v !== undefined && v !== "") applyString(s, v, "env", s.env);
  }

  function applyString(s: Setting, value: string, source: Source, origin: string): void {
    try {
      assign(s.path, convert(s, value), source, origin);
    } catch (err) {
      problems.push({
        path: s.path,
        source,
        origin,
        expected: (err as Error).message.replace(/^expected /, ""),
        received: describe(s.path, value),
      });
    }
  }

  const keyFile = getPath(raw, "platform.apiKeyFile");
  if (typeof keyFile === "string" && keyFile && getPath(raw, "platform.apiKey") === undefined) {
    try {
      setPath(raw, "platform.apiKey", (input.readFile ?? (() => ""))(keyFile).trim());
    } catch (err) {
      problems.push({
        path: "platform.apiKeyFile",
        source: sources["platform.apiKeyFile"] ?? "file",
        origin: origins["platform.apiKeyFile"] ?? keyFile,
        expected: "a readable file",
        received: (err as Error).message.split("\n")[0],
      });
    }
  }

  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.join(".");
      const known = Object.keys(sources).find(
        (p) => p === path || path.startsWith(`${p}.`) || p.startsWith(`${path}.`),
      );
      const source = known ? (sources[known] ?? "default") : "default";
      problems.push({
        path,
        source,
        origin: known ? (origins[known] ?? "") : "default",
        expected: issue.message.replace(/^Invalid input: expected /, ""),
        received: describe(path, getPath(raw, path)),
      });
    }
  }
  if (
    parsed.success &&
    input.requireApi &&
    !parsed.data.platform.apiUrl &&
    !flags.help &&
    !flags.version
  ) {
    problems.push({
      path: "platform.apiUrl",
      source: "default",
      origin: "SANDBOX_API_URL or --api-url",
      expected: "the management API URL",
    });
  }
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);
  return {
    config: parsed.data,
    sources,
    help: flags.help === true,
    version: flags.version === true,
  };
}

/** A deep copy safe to print: secrets shown as ***. */
export function redactConfig(config: Config): Config {
  const copy = structuredClone(config);
  if (copy.platform.apiKey) copy.platform.apiKey = "***";
  return copy;
}

/** The --help text: every flag, its environment variable and default. */
export function helpText(): string {
  const defaults = ConfigSchema.parse({});
  const rows = SETTINGS.map((s) => {
    const flag = s.flag ? `--${s.flag}` : "(no flag)";
    const def = getPath(defaults, s.path);
    const shown = def === undefined || def === "" ? "" : ` [default: ${JSON.stringify(def)}]`;
    return `  ${flag.padEnd(26)} ${s.env.padEnd(40)} ${s.help}${shown}`;
  });
  return [
    "Usage: sandbox-exporter [--config FILE] [flags]",
    "",
    "Precedence: environment > flags > config file > defaults.",
    "",
    `  ${"--config FILE".padEnd(26)} ${"".padEnd(40)} YAML or JSON config file`,
    ...rows,
    `  ${"--help".padEnd(26)} ${"".padEnd(40)} this text`,
    `  ${"--version".padEnd(26)} ${"".padEnd(40)} print the version`,
    "",
  ].join("\n");
}
