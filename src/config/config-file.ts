// The --config file: YAML or JSON (JSON is YAML 1.2), nested keys as in the dotted setting paths,
// plus the seed client's PascalCase field names at the top level.
import type { ConfigProblem } from "./errors.js";
import type { Setting } from "./settings.js";
import { readYamlFile, type YamlFileProblem } from "./yaml-file.js";

/** One value the file sets, with where in the file it was written. */
export interface FileValue {
  /** The keys leading to the value (a key may itself contain dots, e.g. a field-map entry). */
  keys: string[];
  path: string;
  value: unknown;
  /** `config.yaml:poll.pageLimit`, or `config.yaml:Timeout` for a seed name. */
  origin: string;
}

/** Path of file-level problems (syntax, not a mapping, unreadable). */
export const FILE_PATH = "(config file)";

/**
 * Reads and parses the file into leaf values; a problem for each syntax error, alias clash, and
 * for a file that is unreadable, empty or not a mapping.
 */
export function readConfigFile(
  file: string,
  readFile: (path: string) => string,
  settings: readonly Setting[],
): { values: FileValue[]; problems: ConfigProblem[] } {
  const aliases = settings.filter((s) => s.seed).map((s) => [s.seed as string, s.path] as const);
  const problem = (origin: string, expected: string, received?: string): ConfigProblem => ({
    path: FILE_PATH,
    source: "file",
    origin,
    expected,
    received,
  });
  const read = readYamlFile(file, readFile);
  if (!read.ok) {
    const problems = read.problems.map((p) => {
      const quoted = JSON.stringify(p.message);
      switch (p.kind) {
        case "unreadable":
          return problem(file, "a readable file", quoted);
        case "syntax":
          return problem(at(file, p), "valid YAML or JSON", quoted);
        default:
          // Empty counts: a named file that says nothing is a wrong mount or a truncated write.
          return problem(file, "a mapping of settings at the top level", p.message);
      }
    });
    return { values: [], problems };
  }
  const root = read.root;
  const values: FileValue[] = [];
  const problems: ConfigProblem[] = [];
  const rest = { ...root };
  const nested: FileValue[] = [];
  for (const [seed, path] of aliases) {
    if (!(seed in rest)) continue;
    const value = rest[seed];
    delete rest[seed];
    if (value !== null)
      values.push({ keys: path.split("."), path, value, origin: `${file}:${seed}` });
  }
  collectLeaves(rest, [], file, nested);
  const seeded = new Map(values.map((a) => [a.path, a]));
  for (const v of nested) {
    const alias = seeded.get(v.path);
    if (alias) {
      problems.push({
        path: v.path,
        source: "file",
        origin: v.origin,
        expected: `either ${alias.origin.slice(file.length + 1)} or ${v.path}, not both`,
      });
    } else values.push(v);
  }
  return { values, problems };
}

/** Leaves of the mapping; lists are leaves, null means "not set" (an emptied YAML key). */
function collectLeaves(node: unknown, keys: string[], file: string, out: FileValue[]): void {
  if (node === null) return;
  const path = keys.join(".");
  const leaf = (value: unknown): void => {
    out.push({ keys, path, value, origin: `${file}:${path}` });
  };
  if (typeof node !== "object" || Array.isArray(node)) {
    leaf(node);
    return;
  }
  const entries = Object.entries(node);
  // An empty mapping still counts as set, so a misspelt section name is reported.
  if (entries.length === 0 && keys.length > 0) {
    leaf({});
    return;
  }
  for (const [k, v] of entries) collectLeaves(v, [...keys, k], file, out);
}

/** `config.yaml:3:7` when the parser knows the place, else the file. */
function at(file: string, p: YamlFileProblem): string {
  return p.line === undefined ? file : `${file}:${p.line}:${p.col ?? 1}`;
}
