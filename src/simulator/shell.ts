// A tiny bash stand-in: echo, cat, sleep, exit, true, false, pwd, with redirection into the
// sandbox's in-memory files. A generator, so sleeps pause the caller and side effects stay in order.
import { posix } from "node:path";
import { parseScript, type ShellCommand, ShellSyntaxError } from "./shell-parse.js";

/** Something the running script does that the caller must carry out. */
export type ShellOp =
  | { kind: "stdout"; data: Buffer }
  | { kind: "stderr"; data: Buffer }
  | { kind: "sleep"; ms: number };

/** Where a script runs. */
export interface ShellEnv {
  files: Map<string, Buffer>;
  cwd: string;
  env: Readonly<Record<string, string>>;
}

interface Result {
  code: number;
  stdout: string;
  stderr: string;
  sleepMs?: number;
  exit?: boolean;
}

function run(argv: readonly string[], sh: ShellEnv, last: number): Result {
  const [name, ...args] = argv;
  switch (name) {
    case undefined:
    case "true":
    case ":":
      return { code: 0, stdout: "", stderr: "" };
    case "false":
      return { code: 1, stdout: "", stderr: "" };
    case "pwd":
      return { code: 0, stdout: `${sh.cwd}\n`, stderr: "" };
    case "echo": {
      const noNewline = args[0] === "-n";
      const words = noNewline ? args.slice(1) : args;
      return { code: 0, stdout: words.join(" ") + (noNewline ? "" : "\n"), stderr: "" };
    }
    case "cat": {
      let stdout = "";
      let stderr = "";
      let code = 0;
      for (const f of args) {
        const content = sh.files.get(posix.resolve(sh.cwd, f));
        if (content === undefined) {
          stderr += `cat: ${f}: No such file or directory\n`;
          code = 1;
        } else {
          stdout += content.toString("latin1");
        }
      }
      return { code, stdout, stderr };
    }
    case "sleep": {
      const s = Number(args[0]);
      if (args.length !== 1 || !Number.isFinite(s) || s < 0) {
        return { code: 1, stdout: "", stderr: `sleep: invalid time interval '${args[0] ?? ""}'\n` };
      }
      return { code: 0, stdout: "", stderr: "", sleepMs: s * 1000 };
    }
    case "exit": {
      const n = args[0] === undefined ? last : Number.parseInt(args[0], 10);
      return { code: Number.isNaN(n) ? 2 : n & 255, stdout: "", stderr: "", exit: true };
    }
    default:
      return { code: 127, stdout: "", stderr: `bash: ${name}: command not found\n` };
  }
}

function redirect(sh: ShellEnv, cmd: ShellCommand, out: Buffer): void {
  if (!cmd.redirect) return;
  const path = posix.resolve(sh.cwd, cmd.redirect.path);
  if (path === "/dev/null") return;
  const old = cmd.redirect.append ? sh.files.get(path) : undefined;
  sh.files.set(path, old ? Buffer.concat([old, out]) : out);
}

/** Runs `script`, yielding output and sleeps; returns the exit code. */
export function* runScript(script: string, sh: ShellEnv): Generator<ShellOp, number> {
  let steps: ReturnType<typeof parseScript>;
  try {
    steps = parseScript(script, sh.env);
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    yield { kind: "stderr", data: Buffer.from(`bash: -c: line 1: ${err.message}\n`) };
    return 2;
  }
  let code = 0;
  for (const { connector, command } of steps) {
    if ((connector === "&&" && code !== 0) || (connector === "||" && code === 0)) continue;
    // Output bytes keep what cat read verbatim (latin1 round-trips any byte).
    const r = run(command.argv, sh, code);
    code = r.code;
    if (r.sleepMs !== undefined) yield { kind: "sleep", ms: r.sleepMs };
    const stdout = Buffer.from(r.stdout, command.argv[0] === "cat" ? "latin1" : "utf8");
    if (command.redirect) redirect(sh, command, stdout);
    else if (stdout.byteLength > 0) yield { kind: "stdout", data: stdout };
    if (r.stderr !== "") yield { kind: "stderr", data: Buffer.from(r.stderr) };
    if (r.exit) return code;
  }
  return code;
}

/** Quotes one argument for the parser (used to run an argv that is not a bash -c script). */
export function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`;
}
