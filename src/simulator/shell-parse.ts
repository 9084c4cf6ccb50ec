// Parses the small subset of bash the simulator runs: words, quotes, $VAR, ${VAR}, $!, $?, ~,
// NAME=value prefixes, ; && || &, and the redirections > >> N> N>> N>&M &> <. Parameters are
// expanded as each command runs (expandCommand), so `export X=1 && echo $X` sees X.

/** A piece of a word: text as written, or a parameter filled in when its command runs. */
export type WordPart = { text: string; quoted: boolean } | { param: string; quoted: boolean };

/** A word before expansion. */
export type Word = WordPart[];

/** Where an output stream of a command goes: one of the two streams of the run, or a file. */
export type Sink = { fd: 1 | 2 } | { path: string; append: boolean };

/** A Sink whose file is a word still to expand. */
type RawSink = { fd: 1 | 2 } | { path: Word; append: boolean };

/** One simple command with its redirections, expanded. */
export interface ShellCommand {
  /** `NAME=value` words before the command: variables of that command alone, or of the shell. */
  assignments: Array<[string, string]>;
  argv: string[];
  stdout: Sink;
  stderr: Sink;
  /** File read as stdin (`< path`). */
  stdin?: string;
  /** Started as a background job (`cmd &`). */
  background: boolean;
}

/** One simple command as parsed: its words still to expand. */
export interface RawCommand {
  assignments: Array<[string, Word]>;
  words: Word[];
  stdout: RawSink;
  stderr: RawSink;
  stdin?: Word;
  background: boolean;
}

/** A command and how it joins the previous one. */
export interface ShellStep {
  connector: ";" | "&&" | "||";
  command: RawCommand;
}

type Token = { kind: "word"; value: Word } | { kind: "op"; value: string; fd?: number };

/** Thrown for input the subset cannot parse; the message reads like bash's. */
export class ShellSyntaxError extends Error {}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=/;
/** What may follow a `~` that stands for $HOME. */
const TILDE_END = /[/\s;&|<>]/;

/** Reads $NAME, ${NAME}, $! or $? at `i`: the parameter (undefined for a lone `$`) and the index after. */
function parameter(src: string, i: number): [string | undefined, number] {
  const next = src[i + 1] ?? "";
  if (next === "!" || next === "?") return [next, i + 2];
  if (next === "{") {
    const close = src.indexOf("}", i + 2);
    if (close < 0) throw new ShellSyntaxError("bad substitution");
    return [src.slice(i + 2, close), close + 1];
  }
  NAME.lastIndex = i + 1;
  const m = NAME.exec(src);
  if (!m) return [undefined, i + 1];
  return [m[0], i + 1 + m[0].length];
}

/**
 * The word filled in by `lookup`, or undefined when it expands to nothing and nothing in it was
 * quoted (bash drops such a word: `cd $UNSET` is `cd`).
 */
export function expandWord(
  word: Word,
  lookup: (name: string) => string | undefined,
): string | undefined {
  let text = "";
  let quoted = false;
  for (const part of word) {
    quoted ||= part.quoted;
    text += "text" in part ? part.text : (lookup(part.param) ?? "");
  }
  return text === "" && !quoted ? undefined : text;
}

/** `raw` with every word filled in by `lookup`. */
export function expandCommand(
  raw: RawCommand,
  lookup: (name: string) => string | undefined,
): ShellCommand {
  const one = (w: Word) => expandWord(w, lookup) ?? "";
  const sink = (s: RawSink): Sink => ("path" in s ? { path: one(s.path), append: s.append } : s);
  const stdout = sink(raw.stdout);
  return {
    assignments: raw.assignments.map(([name, value]) => [name, one(value)]),
    argv: raw.words.flatMap((w) => expandWord(w, lookup) ?? []),
    stdout,
    stderr: raw.stderr === raw.stdout ? stdout : sink(raw.stderr),
    ...(raw.stdin !== undefined ? { stdin: one(raw.stdin) } : {}),
    background: raw.background,
  };
}

/** Operators, longest first. */
const OPS = ["&&", "||", ">>", ">&", "&>", ">", "|", "&", "<"];

/** The text of a word with nothing to expand, or undefined. */
function literal(word: Word): string | undefined {
  let text = "";
  for (const part of word) {
    if (!("text" in part)) return undefined;
    text += part.text;
  }
  return text;
}

/** Reads the double-quoted string opening at `i`: its parts and the index after the closing quote. */
function doubleQuoted(src: string, i: number): [Word, number] {
  const parts: Word = [];
  let text = "";
  let at = i + 1;
  for (;;) {
    if (at >= src.length)
      throw new ShellSyntaxError("unexpected EOF while looking for matching `\"'");
    const d = src[at] as string;
    if (d === '"') break;
    if (d === "\\" && '"\\$`\n'.includes(src[at + 1] ?? "")) {
      text += src[at + 1];
      at += 2;
    } else if (d === "$") {
      const [name, next] = parameter(src, at);
      if (name === undefined) text += "$";
      else {
        parts.push({ text, quoted: true }, { param: name, quoted: true });
        text = "";
      }
      at = next;
    } else {
      text += d;
      at++;
    }
  }
  parts.push({ text, quoted: true });
  return [parts, at + 1];
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let word: Word | undefined;
  const flush = () => {
    if (word !== undefined) tokens.push({ kind: "word", value: word });
    word = undefined;
  };
  // Adjacent text of the same quoting joins into one part, so `X=1` is one text to match.
  const append = (...parts: WordPart[]) => {
    word ??= [];
    for (const part of parts) {
      const last = word.at(-1);
      if (last && "text" in last && "text" in part && last.quoted === part.quoted)
        last.text += part.text;
      else word.push({ ...part });
    }
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    const op = OPS.find((o) => src.startsWith(o, i));
    if (c === " " || c === "\t") {
      flush();
      i++;
    } else if (c === "\n" || c === ";") {
      flush();
      tokens.push({ kind: "op", value: ";" });
      i++;
    } else if (op !== undefined) {
      // A word of one bare digit right before > or < is the file descriptor it redirects ("2>&1").
      const digit = word?.length === 1 && !word[0]?.quoted ? literal(word) : undefined;
      const token: Token = { kind: "op", value: op };
      if (digit !== undefined && /^\d$/.test(digit) && /[<>]/.test(op[0] as string)) {
        token.fd = Number(digit);
        word = undefined;
      }
      flush();
      tokens.push(token);
      i += op.length;
    } else if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) throw new ShellSyntaxError("unexpected EOF while looking for matching `''");
      append({ text: src.slice(i + 1, close), quoted: true });
      i = close + 1;
    } else if (c === '"') {
      const [parts, next] = doubleQuoted(src, i);
      append(...parts);
      i = next;
    } else if (c === "\\") {
      append({ text: src[i + 1] ?? "", quoted: true });
      i += 2;
    } else if (c === "$") {
      const [name, next] = parameter(src, i);
      append(name === undefined ? { text: "$", quoted: false } : { param: name, quoted: false });
      i = next;
    } else if (c === "~" && word === undefined && TILDE_END.test(src[i + 1] ?? " ")) {
      append({ param: "HOME", quoted: false });
      i++;
    } else if (c === "#" && word === undefined) {
      while (i < src.length && src[i] !== "\n") i++;
    } else {
      append({ text: c, quoted: false });
      i++;
    }
  }
  flush();
  return tokens;
}

function newCommand(): RawCommand {
  return { assignments: [], words: [], stdout: { fd: 1 }, stderr: { fd: 2 }, background: false };
}

/** Applies one redirection operator with its target word to `command`. */
function redirect(command: RawCommand, op: Token & { kind: "op" }, target: Word): void {
  if (op.value === "<") {
    command.stdin = target;
    return;
  }
  if (op.value === "&>") {
    command.stdout = { path: target, append: false };
    command.stderr = command.stdout;
    return;
  }
  const fd = op.fd ?? 1;
  if (fd !== 1 && fd !== 2) throw new ShellSyntaxError(`file descriptor ${fd} is not supported`);
  let sink: RawSink;
  if (op.value === ">&") {
    // N>&M points N where M points now, as bash's dup2 does: `>f 2>&1` sends both to f.
    const to = literal(target);
    if (to === "1") sink = command.stdout;
    else if (to === "2") sink = command.stderr;
    else throw new ShellSyntaxError(`${to ?? "$"}: ambiguous redirect`);
  } else {
    sink = { path: target, append: op.value === ">>" };
  }
  if (fd === 1) command.stdout = sink;
  else command.stderr = sink;
}

/** `NAME=value` as a command's leading word: the name and the value's word, or undefined. */
function assignment(word: Word): [string, Word] | undefined {
  const [first, ...rest] = word;
  if (first === undefined || !("text" in first) || first.quoted) return undefined;
  const m = ASSIGNMENT.exec(first.text);
  if (!m) return undefined;
  const value: Word = [{ text: first.text.slice(m[0].length), quoted: false }, ...rest];
  return [m[1] as string, value];
}

/** Parses a script into steps; throws ShellSyntaxError on what the subset does not support. */
export function parseScript(src: string): ShellStep[] {
  const steps: ShellStep[] = [];
  let connector: ShellStep["connector"] = ";";
  let command = newCommand();
  let pending = false;
  const tokens = tokenize(src);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === "word") {
      const set = command.words.length === 0 ? assignment(t.value) : undefined;
      if (set) command.assignments.push(set);
      else command.words.push(t.value);
      pending = true;
    } else if ([">", ">>", ">&", "&>", "<"].includes(t.value)) {
      const target = tokens[++i];
      if (target?.kind !== "word")
        throw new ShellSyntaxError("syntax error near unexpected token `newline'");
      redirect(command, t, target.value);
      pending = true;
    } else if (t.value === ";" || t.value === "&&" || t.value === "||" || t.value === "&") {
      if (!pending) {
        // Empty statements (a leading or doubled ";") are skipped; a dangling && || or & is not.
        if (t.value === ";") continue;
        throw new ShellSyntaxError(`syntax error near unexpected token \`${t.value}'`);
      }
      command.background = t.value === "&";
      steps.push({ connector, command });
      // A background job joins the next command like `;`.
      connector = t.value === "&" ? ";" : t.value;
      command = newCommand();
      pending = false;
    } else {
      throw new ShellSyntaxError(`'${t.value}' is not supported by the simulator`);
    }
  }
  if (pending) steps.push({ connector, command });
  else if (connector !== ";") throw new ShellSyntaxError("syntax error: unexpected end of file");
  return steps;
}
