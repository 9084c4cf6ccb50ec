// Parses the small subset of bash the simulator runs: words, quotes, $VAR, ; && || > >>.

/** One simple command with an optional stdout redirection. */
export interface ShellCommand {
  argv: string[];
  redirect?: { path: string; append: boolean };
}

/** A command and how it joins the previous one. */
export interface ShellStep {
  connector: ";" | "&&" | "||";
  command: ShellCommand;
}

type Token = { kind: "word"; value: string } | { kind: "op"; value: string };

/** Thrown for input the subset cannot parse; the message reads like bash's. */
export class ShellSyntaxError extends Error {}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

/** Expands $NAME or ${NAME} at `i`; returns the text and the index after it. */
function expand(src: string, i: number, env: Readonly<Record<string, string>>): [string, number] {
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

function tokenize(src: string, env: Readonly<Record<string, string>>): Token[] {
  const tokens: Token[] = [];
  let word: string | undefined;
  const flush = () => {
    if (word !== undefined) tokens.push({ kind: "word", value: word });
    word = undefined;
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (c === " " || c === "\t") {
      flush();
      i++;
    } else if (c === "\n" || c === ";") {
      flush();
      tokens.push({ kind: "op", value: ";" });
      i++;
    } else if (src.startsWith("&&", i) || src.startsWith("||", i) || src.startsWith(">>", i)) {
      flush();
      tokens.push({ kind: "op", value: src.slice(i, i + 2) });
      i += 2;
    } else if (c === ">" || c === "|" || c === "&" || c === "<") {
      flush();
      tokens.push({ kind: "op", value: c });
      i++;
    } else if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) throw new ShellSyntaxError("unexpected EOF while looking for matching `''");
      word = (word ?? "") + src.slice(i + 1, close);
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
      word = (word ?? "") + text;
      i++;
    } else if (c === "\\") {
      word = (word ?? "") + (src[i + 1] ?? "");
      i += 2;
    } else if (c === "$") {
      const [v, next] = expand(src, i, env);
      word = (word ?? "") + v;
      i = next;
    } else if (c === "#" && word === undefined) {
      while (i < src.length && src[i] !== "\n") i++;
    } else {
      word = (word ?? "") + c;
      i++;
    }
  }
  flush();
  return tokens;
}

/** Parses a script into steps; throws ShellSyntaxError on what the subset does not support. */
export function parseScript(src: string, env: Readonly<Record<string, string>>): ShellStep[] {
  const steps: ShellStep[] = [];
  let connector: ShellStep["connector"] = ";";
  let command: ShellCommand = { argv: [] };
  let pending = false;
  const tokens = tokenize(src, env);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind === "word") {
      command.argv.push(t.value);
      pending = true;
    } else if (t.value === ">" || t.value === ">>") {
      const target = tokens[++i];
      if (target?.kind !== "word")
        throw new ShellSyntaxError("syntax error near unexpected token `newline'");
      command.redirect = { path: target.value, append: t.value === ">>" };
      pending = true;
    } else if (t.value === ";" || t.value === "&&" || t.value === "||") {
      if (!pending) {
        // Empty statements (a leading or doubled ";") are skipped; a dangling && or || is not.
        if (t.value === ";") continue;
        throw new ShellSyntaxError(`syntax error near unexpected token \`${t.value}'`);
      }
      steps.push({ connector, command });
      connector = t.value;
      command = { argv: [] };
      pending = false;
    } else {
      throw new ShellSyntaxError(`'${t.value}' is not supported by the simulator`);
    }
  }
  if (pending) steps.push({ connector, command });
  else if (connector !== ";") throw new ShellSyntaxError("syntax error: unexpected end of file");
  return steps;
}
