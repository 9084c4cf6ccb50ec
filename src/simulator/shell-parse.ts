// Parses the small subset of bash the simulator runs: words, quotes, $VAR, $!, ; && || &,
// and the redirections > >> N> N>> N>&M &> <.

/** Where an output stream of a command goes: one of the two streams of the run, or a file. */
export type Sink = { fd: 1 | 2 } | { path: string; append: boolean };

/** One simple command with its redirections. */
export interface ShellCommand {
  argv: string[];
  stdout: Sink;
  stderr: Sink;
  /** File read as stdin (`< path`). */
  stdin?: string;
  /** Started as a background job (`cmd &`). */
  background: boolean;
}

/** A command and how it joins the previous one. */
export interface ShellStep {
  connector: ";" | "&&" | "||";
  command: ShellCommand;
}

type Token = { kind: "word"; value: string } | { kind: "op"; value: string; fd?: number };

/** Thrown for input the subset cannot parse; the message reads like bash's. */
export class ShellSyntaxError extends Error {}

/**
 * Stands for `$!` in a parsed word. The script is expanded once, before it runs, but `$!` names a
 * job the same script starts, so the shell fills it in as each command runs.
 */
export const LAST_JOB = "\u{E000}!";

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

/** Expands $NAME, ${NAME} or $! at `i`; returns the text and the index after it. */
function expand(src: string, i: number, env: Readonly<Record<string, string>>): [string, number] {
  if (src[i + 1] === "!") return [LAST_JOB, i + 2];
  if (src[i + 1] === "{") {
    const close = src.indexOf("}", i + 2);
    if (close < 0) throw new ShellSyntaxError("bad substitution");
    return [env[src.slice(i + 2, close)] ?? "", close + 1];
  }
  NAME.lastIndex = i + 1;
  const m = NAME.exec(src);
  if (!m) return ["$", i + 1];
  return [env[m[0]] ?? "", i + 1 + m[0].length];
}

/** Operators, longest first. */
const OPS = ["&&", "||", ">>", ">&", "&>", ">", "|", "&", "<"];

function tokenize(src: string, env: Readonly<Record<string, string>>): Token[] {
  const tokens: Token[] = [];
  let word: string | undefined;
  // A word of bare digits right before > or < is the file descriptor it redirects ("2>&1").
  let bare = true;
  const flush = () => {
    if (word !== undefined) tokens.push({ kind: "word", value: word });
    word = undefined;
    bare = true;
  };
  const append = (text: string, quoted: boolean) => {
    word = (word ?? "") + text;
    if (quoted) bare = false;
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
      const fd = bare && word !== undefined && /^\d$/.test(word) && /[<>]/.test(op[0] as string);
      const token: Token = { kind: "op", value: op };
      if (fd) {
        token.fd = Number(word);
        word = undefined;
      }
      flush();
      tokens.push(token);
      i += op.length;
    } else if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) throw new ShellSyntaxError("unexpected EOF while looking for matching `''");
      append(src.slice(i + 1, close), true);
      i = close + 1;
    } else if (c === '"') {
      let text = "";
      i++;
      for (;;) {
        if (i >= src.length)
          throw new ShellSyntaxError("unexpected EOF while looking for matching `\"'");
        const d = src[i] as string;
        if (d === '"') break;
        if (d === "\\" && '"\\$`\n'.includes(src[i + 1] ?? "")) {
          text += src[i + 1];
          i += 2;
        } else if (d === "$") {
          const [v, next] = expand(src, i, env);
          text += v;
          i = next;
        } else {
          text += d;
          i++;
        }
      }
      append(text, true);
      i++;
    } else if (c === "\\") {
      append(src[i + 1] ?? "", true);
      i += 2;
    } else if (c === "$") {
      const [v, next] = expand(src, i, env);
      append(v, true);
      i = next;
    } else if (c === "#" && word === undefined) {
      while (i < src.length && src[i] !== "\n") i++;
    } else {
      append(c, false);
      i++;
    }
  }
  flush();
  return tokens;
}

function newCommand(): ShellCommand {
  return { argv: [], stdout: { fd: 1 }, stderr: { fd: 2 }, background: false };
}

/** Applies one redirection operator with its target word to `command`. */
function redirect(command: ShellCommand, op: Token & { kind: "op" }, target: string): void {
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
  let sink: Sink;
  if (op.value === ">&") {
    // N>&M points N where M points now, as bash's dup2 does: `>f 2>&1` sends both to f.
    if (target === "1") sink = command.stdout;
    else if (target === "2") sink = command.stderr;
    else throw new ShellSyntaxError(`${target}: ambiguous redirect`);
  } else {
    sink = { path: target, append: op.value === ">>" };
  }
  if (fd === 1) command.stdout = sink;
  else command.stderr = sink;
}

/** Parses a script into steps; throws ShellSyntaxError on what the subset does not support. */
export function parseScript(src: string, env: Readonly<Record<string, string>>): ShellStep[] {
  const steps: ShellStep[] = [];
  let connector: ShellStep["connector"] = ";";
  let command = newCommand();
  let pending = false;
  const tokens = tokenize(src, env);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === "word") {
      command.argv.push(t.value);
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
