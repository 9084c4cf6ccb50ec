// Reads a YAML or JSON settings file (the --config file, the policy rule file) into a mapping,
// turning every way it can fail into problems that name the place in the file. Hostile input
// must fail fast: an alias bomb, deep nesting, a self-referencing alias or a huge mapping.
import {
  Composer,
  type CST,
  type Document,
  isScalar,
  Lexer,
  LineCounter,
  type Node,
  Parser,
  visit,
} from "yaml";
import { errorLine } from "../util/errors.js";

/**
 * Alias expansions one file may make: a real file needs a handful, a "billion laughs" file
 * needs millions. yaml's own default is the same; it is set here so it cannot drift.
 */
export const MAX_ALIAS_COUNT = 100;

/**
 * Open collections at once. Settings files need under ten; yaml composes recursively and a few
 * thousand levels overflow the stack, which V8 cannot always survive (a fatal error, not a throw).
 */
export const MAX_NESTING = 64;

/** Why a settings file was refused. */
export type YamlFileFailure = "unreadable" | "syntax" | "empty" | "not-mapping";

/**
 * One problem with a settings file. `message` is one line that quotes no value from the file:
 * the error for "unreadable" and "syntax", what the file holds instead of a mapping ("an empty
 * file", "a list") for "empty" and "not-mapping".
 */
export interface YamlFileProblem {
  kind: YamlFileFailure;
  /** 1-based line and column, when known. */
  line?: number;
  col?: number;
  message: string;
}

/** The file's top-level mapping, or every problem found. */
export type YamlFileResult =
  | { ok: true; root: Record<string, unknown> }
  | { ok: false; problems: YamlFileProblem[] };

const MAX_KEY_SHOWN = 40;

/** Thrown out of the token stream to stop parsing a file nested too deeply. */
class TooDeep extends Error {
  constructor(readonly offset: number) {
    super(`nested deeper than ${MAX_NESTING} levels`);
  }
}

/**
 * Reads and parses `file`. A file that was named must say something: empty, whitespace-only,
 * comment-only and `null` files are refused, as is anything but a mapping at the top level.
 */
export function readYamlFile(file: string, readFile: (path: string) => string): YamlFileResult {
  const lines = new LineCounter();
  const fail = (kind: YamlFileFailure, message: string, offset?: number): YamlFileResult => ({
    ok: false,
    problems: [{ kind, message, ...(offset === undefined ? {} : position(lines, offset)) }],
  });
  let text: string;
  try {
    text = readFile(file);
  } catch (err) {
    return fail("unreadable", errorLine(err));
  }
  let root: unknown;
  try {
    const docs = new Composer({ uniqueKeys: false }).compose(
      tokens(text, lines),
      true,
      text.length,
    );
    const first = docs.next();
    if (first.done) return fail("empty", "an empty file");
    const doc = first.value;
    const second = docs.next();
    if (!second.done) return fail("syntax", "more than one YAML document", second.value.range[0]);
    const problems = [
      ...doc.errors.map((e) => ({ message: errorLine(e), offset: e.pos[0] })),
      ...structureProblems(doc),
    ].map(({ message, offset }): YamlFileProblem => {
      // Only the first line: the rest quotes the file, which may hold the API key.
      const what = message.replace(/ at line \d+, column \d+:?$/, "");
      return { kind: "syntax", message: what, ...position(lines, offset) };
    });
    if (problems.length > 0) return { ok: false, problems };
    root = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (err instanceof TooDeep) return fail("syntax", err.message, err.offset);
    // toJS throws on too many alias expansions; nothing else may escape as a crash either.
    return fail("syntax", errorLine(err));
  }
  if (root === null || root === undefined) return fail("empty", "an empty file");
  if (typeof root !== "object" || Array.isArray(root))
    return fail("not-mapping", Array.isArray(root) ? "a list" : `a ${typeof root}`);
  return { ok: true, root: root as Record<string, unknown> };
}

/** yaml's CST tokens, stopping with TooDeep as soon as the nesting passes MAX_NESTING. */
function* tokens(text: string, lines: LineCounter): Generator<CST.Token, void> {
  const parser = new Parser(lines.addNewLine);
  lines.addNewLine(0);
  for (const lexeme of new Lexer().lex(text)) {
    yield* parser.next(lexeme);
    if (parser.stack.length > MAX_NESTING) throw new TooDeep(parser.offset);
  }
  yield* parser.end();
}

/**
 * Repeated keys and aliases inside the node they name (a cycle no settings value can be). yaml
 * checks keys itself only pairwise, quadratic in a mapping's size; a Set per mapping is linear.
 */
function structureProblems(doc: Document.Parsed): Array<{ message: string; offset: number }> {
  const out: Array<{ message: string; offset: number }> = [];
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        const id = isScalar(key) ? key.value : key;
        if (seen.has(id)) {
          const shown = String(id).slice(0, MAX_KEY_SHOWN);
          out.push({
            message: `Map keys must be unique: "${shown}" repeats`,
            offset: offsetOf(key),
          });
        }
        seen.add(id);
      }
    },
    Alias(_, alias, path) {
      const target = alias.resolve(doc);
      if (target && path.includes(target))
        out.push({ message: `alias *${alias.source} refers to itself`, offset: offsetOf(alias) });
    },
  });
  return out;
}

function offsetOf(node: unknown): number {
  return (node as Node | null)?.range?.[0] ?? 0;
}

function position(lines: LineCounter, offset: number): { line?: number; col?: number } {
  const at = lines.linePos(offset);
  return at.line > 0 ? { line: at.line, col: at.col } : {};
}
