// Configuration problems: which setting, where its value came from, what was expected.
import { ExporterError } from "../util/errors.js";
import { isSecretPath } from "./redact.js";

/** Where a value came from. */
export type Source = "env" | "file" | "flag" | "default";

/** One problem with one setting. */
export interface ConfigProblem {
  /** Dotted path of the setting (`poll.pageLimit`), or `argv` / `(config file)` for syntax. */
  path: string;
  source: Source;
  /** The variable, flag or file location that supplied the value: `SANDBOX_TIMEOUT`, `--page-limit`, `config.yaml:poll.pageLimit`. */
  origin: string;
  /** What would have been accepted, without the word "expected". */
  expected: string;
  /** The offending value as shown to the operator (already quoted, secrets as "***"). */
  received?: string;
}

/** Configuration is unusable; `problems` lists every problem found, `format()` one line each. */
export class ConfigError extends ExporterError {
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[]) {
    super("ERR_CONFIG", problems.map(formatProblem).join("\n"));
    this.problems = problems;
  }

  /** One line per problem naming the setting, its source and what was expected. */
  format(): string {
    return this.message;
  }
}

/** `platform.timeoutMs (env SANDBOX_TIMEOUT): expected a duration like ..., got "abc"`. */
export function formatProblem(p: ConfigProblem): string {
  const where = p.origin ? `${p.source} ${p.origin}` : p.source;
  const got = p.received === undefined ? "" : `, got ${p.received}`;
  return `${p.path} (${where}): expected ${p.expected}${got}`;
}

const MAX_SHOWN = 80;

/** A value as a problem shows it: JSON, shortened, secrets as "***", URL credentials hidden. */
export function showValue(path: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (isSecretPath(path)) return value === "" ? '""' : '"***"';
  const text = (JSON.stringify(value) ?? String(value)).replace(/\/\/[^/@\s"]*@/g, "//***@");
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 3)}...` : text;
}
