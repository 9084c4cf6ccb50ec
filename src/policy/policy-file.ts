// Reads the policy rule file (YAML or JSON) and merges it with the config's `policy:` section.
import type { z } from "zod";
import type { Config } from "../config/settings.js";
import { readYamlFile, type YamlFileProblem } from "../config/yaml-file.js";
import { ExporterError } from "../util/errors.js";
import { PolicyFileSchema, type PolicySpec, policySpec } from "./policy-settings.js";

/** The rule file is unusable; the message lists every problem, each naming the rule and field. */
export class PolicyFileError extends ExporterError {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super("ERR_POLICY_FILE", `policy file ${file}: ${problems.join("; ")}`);
  }
}

/** The effective policy: the config section plus its rule file, if any. Throws PolicyFileError. */
export function loadPolicySpec(
  section: Config["policy"],
  readFile: (path: string) => string,
): PolicySpec {
  if (section.file === undefined) return policySpec(section);
  return policySpec(section, parsePolicyFile(section.file, readFile));
}

/** Parses and validates one rule file; an unreadable, malformed or empty file throws PolicyFileError. */
export function parsePolicyFile(
  file: string,
  readFile: (path: string) => string,
): z.output<typeof PolicyFileSchema> {
  const read = readYamlFile(file, readFile);
  if (!read.ok) throw new PolicyFileError(file, read.problems.map(fileProblem));
  const root = read.root;
  const parsed = PolicyFileSchema.safeParse(root);
  if (parsed.success) return parsed.data;
  throw new PolicyFileError(
    file,
    parsed.error.issues.map((i) => `${where(root, i.path)}: expected ${expected(i)}`),
  );
}

/** `rules[1] "idle-ci".idleFor`: the index and the rule's name, so the operator finds it. */
function where(root: unknown, path: readonly PropertyKey[]): string {
  let out = "";
  let node: unknown = root;
  for (const key of path) {
    if (typeof key === "number") {
      out += `[${key}]`;
      node = Array.isArray(node) ? node[key] : undefined;
      const name = (node as { name?: unknown } | undefined)?.name;
      if (typeof name === "string" && out.startsWith("rules") && !out.includes("."))
        out += ` "${name}"`;
    } else {
      out += out === "" ? String(key) : `.${String(key)}`;
      node = node && typeof node === "object" ? (node as Record<PropertyKey, unknown>)[key] : node;
    }
  }
  return out === "" ? "(top level)" : out;
}

function expected(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") return `known keys, not ${issue.keys.join(", ")}`;
  return issue.message.replace(/^Invalid input: expected /, "");
}

/** One file-level problem: `not readable (...)`, `line 3, column 7: ...`, `(top level): expected ...`. */
function fileProblem(p: YamlFileProblem): string {
  switch (p.kind) {
    case "unreadable":
      return `not readable (${p.message})`;
    case "syntax":
      return p.line === undefined ? p.message : `line ${p.line}, column ${p.col}: ${p.message}`;
    default:
      return `(top level): expected a mapping of policy settings (rules, dryRun, ...), got ${p.message}`;
  }
}
