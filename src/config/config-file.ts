// The --config file: YAML or JSON (JSON is YAML 1.2), nested keys as in the dotted setting paths,
// plus the seed client's PascalCase field names at the top level.
import { parseDocument } from "yaml";
import type { ConfigProblem } from "./errors.js";
import { SETTINGS } from "./settings.js";

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

const ALIASES = SETTINGS.filter((s) => s.seed).map((s) => [s.seed as string, s.path] as const);

/** Reads and parses the file into leaf values; a problem for each syntax error, alias clash or unreadable file. */
export function readConfigFile(
  file: string,
  readFile: (path: string) => string,
): { values: FileValue[]; problems: ConfigProblem[] } {
  const problem = (origin: string, expected: string, received?: string): ConfigProblem => ({
    path: FILE_PATH,
    source: "file",
    origin,
    expected,
    received,
  });
  let text: string;
  try {
    text = readFile(file);
  } catch (err) {
    return { values: [], problems: [problem(file, "a readable file", firstLine(err))] };
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => {
      const at = e.linePos?.[0];
      // Only the first line: the rest quotes the file, which may hold the API key.
      const what = (e.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "");
      return problem(at ? `${file}:${at.line}:${at.col}` : file, "valid YAML or JSON", what);
    });
    return { values: [], problems };
  }
  let root: unknown;
  try {
    root = doc.toJS();
  } catch (err) {
    return { values: [], problems: [problem(file, "valid YAML or JSON", firstLine(err))] };
  }
  if (root === null || root === undefined) return { values: [], problems: [] };
  if (typeof root !== "object" || Array.isArray(root)) {
    return { values: [], problems: [problem(file, "a mapping of settings at the top level")] };
  }
  const values: FileValue[] = [];
  const problems: ConfigProblem[] = [];
  const rest = { ...(root as Record<string, unknown>) };
  const nested: FileValue[] = [];
  for (const [seed, path] of ALIASES) {
    if (!(seed in rest)) continue;
    const value = rest[seed];
    delete rest[seed];
    if (value !== null)
      values.push({ keys: path.split("."), path, value, origin: `${file}:${seed}` });
  }
  collectLeaves(rest, [], file, nested);
  for (const v of nested) {
    const alias = values.find((a) => a.path === v.path);
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

function firstLine(err: unknown): string {
  return JSON.stringify((err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "");
}
