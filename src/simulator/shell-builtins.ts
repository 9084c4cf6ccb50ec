// The builtins that keep a shell's own state, as bash keeps it per process: the working directory
// (`cd`, `cd -`, `pwd`, $PWD, $OLDPWD) and the variables (`export`, `unset`, `NAME=value`, `env`).
// A script starts in the cwd its process was given, and what it changes lasts to its end only.
import { posix } from "node:path";

/** What one command did. */
export interface Result {
  code: number;
  stdout: string;
  stderr: string;
  sleepMs?: number;
  exit?: boolean;
}

export const ok = (stdout = ""): Result => ({ code: 0, stdout, stderr: "" });
export const fail = (code: number, stderr: string): Result => ({ code, stdout: "", stderr });

/** Directories of the sandbox image; files add their parents, as the files API creates them. */
const IMAGE_DIRS = new Set([
  "/",
  "/bin",
  "/dev",
  "/etc",
  "/home",
  "/home/user",
  "/opt",
  "/proc",
  "/root",
  "/sbin",
  "/tmp",
  "/usr",
  "/usr/bin",
  "/usr/lib",
  "/usr/local",
  "/usr/local/bin",
  "/var",
  "/var/log",
  "/var/tmp",
]);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One script's shell: where it is and its variables (the exported ones are its environment). */
export interface ShellState {
  cwd: string;
  vars: Map<string, string>;
  exported: Set<string>;
  /** The directory the process started in: it exists whatever the files say. */
  readonly start: string;
}

/** A shell started in `cwd` with `env` exported, $PWD set as bash sets it. */
export function shellState(cwd: string, env: Readonly<Record<string, string>>): ShellState {
  const vars = new Map(Object.entries(env));
  vars.set("PWD", cwd);
  return { cwd, vars, exported: new Set(vars.keys()), start: cwd };
}

/** A copy for a subshell (a background job): what it changes stays in it. */
export function subshell(s: ShellState): ShellState {
  return { ...s, vars: new Map(s.vars), exported: new Set(s.exported) };
}

/** Sets `name`; exported too when `exported`, or when it already was. */
export function assign(s: ShellState, name: string, value: string, exported = false): void {
  s.vars.set(name, value);
  if (exported) s.exported.add(name);
}

/** The exported variables, plus `extra` (NAME=value before a command), as `env` lists them. */
export function environ(s: ShellState, extra: ReadonlyArray<[string, string]> = []): string[][] {
  const env = new Map<string, string>();
  for (const name of s.exported) {
    const value = s.vars.get(name);
    if (value !== undefined) env.set(name, value);
  }
  for (const [name, value] of extra) env.set(name, value);
  return [...env];
}

function isDirectory(files: ReadonlyMap<string, Buffer>, s: ShellState, path: string): boolean {
  if (IMAGE_DIRS.has(path) || path === s.start) return true;
  const prefix = `${path}/`;
  for (const file of files.keys()) if (file.startsWith(prefix)) return true;
  return false;
}

/** cd [DIR | -]: no operand goes $HOME, `-` goes $OLDPWD and prints it. */
export function cd(args: readonly string[], s: ShellState, files: ReadonlyMap<string, Buffer>) {
  const operands = args[0] === "--" ? args.slice(1) : args;
  if (operands.length > 1) return fail(1, "bash: cd: too many arguments\n");
  let dir = operands[0];
  const back = dir === "-";
  if (dir === undefined || dir === "-") {
    const from = dir === undefined ? "HOME" : "OLDPWD";
    dir = s.vars.get(from);
    if (dir === undefined) return fail(1, `bash: cd: ${from} not set\n`);
  }
  if (dir === "") return ok();
  const path = posix.resolve(s.cwd, dir);
  if (files.has(path)) return fail(1, `bash: cd: ${dir}: Not a directory\n`);
  if (!isDirectory(files, s, path)) return fail(1, `bash: cd: ${dir}: No such file or directory\n`);
  assign(s, "OLDPWD", s.cwd);
  assign(s, "PWD", path);
  s.cwd = path;
  return ok(back ? `${path}\n` : "");
}

/** export [NAME[=VALUE]...]; with no operand (or -p), the exported variables as bash lists them. */
export function exportVars(args: readonly string[], s: ShellState): Result {
  const operands = args.filter((a) => a !== "-p");
  if (operands.length === 0) {
    const lines = environ(s)
      .sort(([a = ""], [b = ""]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([n, v = ""]) => `declare -x ${n}="${v.replace(/(["\\$`])/g, "\\$1")}"\n`);
    return ok(lines.join(""));
  }
  let stderr = "";
  for (const a of operands) {
    const eq = a.indexOf("=");
    const name = eq < 0 ? a : a.slice(0, eq);
    if (!NAME.test(name)) {
      stderr += `bash: export: \`${a}': not a valid identifier\n`;
      continue;
    }
    s.exported.add(name);
    if (eq >= 0) s.vars.set(name, a.slice(eq + 1));
  }
  return stderr === "" ? ok() : fail(1, stderr);
}

/** unset NAME...: forgets the variables. */
export function unset(args: readonly string[], s: ShellState): Result {
  for (const name of args.filter((a) => a !== "-v")) {
    s.vars.delete(name);
    s.exported.delete(name);
  }
  return ok();
}

/** The words of `env [NAME=VALUE...] [COMMAND...]`: the assignments and the command. */
export function envOperands(args: readonly string[]): {
  extra: Array<[string, string]>;
  command: string[];
} {
  const extra: Array<[string, string]> = [];
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i] as string;
    const eq = a.indexOf("=");
    if (eq <= 0) break;
    extra.push([a.slice(0, eq), a.slice(eq + 1)]);
  }
  return { extra, command: args.slice(i) };
}
