// A tiny bash stand-in: echo, cat, sleep, kill, exit, true, false, the builtins of a working
// directory and variables (cd, pwd, export, unset, env, NAME=value), `python -m http.server` (a
// service on a sandbox port), background jobs (`&`, `$!`), and redirections into the sandbox's
// in-memory files. A generator, so sleeps pause the caller and side effects stay in order.
import { posix } from "node:path";
import type { SimProcess } from "./model.js";
import {
  assign,
  cd,
  environ,
  envOperands,
  exportVars,
  fail,
  ok,
  type Result,
  type ShellState,
  shellState,
  subshell,
  unset,
} from "./shell-builtins.js";
import {
  expandCommand,
  parseScript,
  type ShellCommand,
  ShellSyntaxError,
  type Sink,
} from "./shell-parse.js";

/** Something the running script does that the caller must carry out. */
export type ShellOp =
  | { kind: "stdout"; data: Buffer }
  | { kind: "stderr"; data: Buffer }
  | { kind: "sleep"; ms: number };

/** The sandbox's background processes: they outlive the script that started them. */
export interface ShellJobs {
  /** Processes by pid. */
  table: Map<number, SimProcess>;
  nextPid(): number;
  /** Now on the simulator's clock, epoch ms: a background `sleep N` lives N s of it. */
  now(): number;
}

/** Where a script runs. */
export interface ShellEnv {
  files: Map<string, Buffer>;
  /** The process's start directory (envd's cwd, else the user's home); `cd` moves from it. */
  cwd: string;
  /** The process's environment, exported to what it runs. */
  env: Readonly<Record<string, string>>;
  /** Default: a table of this script's own, from pid 1000 on a clock that stands still. */
  jobs?: ShellJobs;
}

/** How long a foreground service holds its run's stream: longer than any test or sandbox lives. */
const SERVE_HOLD_MS = 24 * 3_600_000;
const PYTHONS = new Set(["python", "python3", "/usr/bin/python3", "/usr/local/bin/python3"]);

/**
 * `python[3] -m http.server [PORT] [--directory|-d DIR] [--bind|-b ADDR]`: the port (default 8000)
 * and the directory it serves (default the cwd); undefined for any other command.
 */
export function httpServerOf(
  argv: readonly string[],
  cwd: string,
): { port: number; dir: string } | undefined {
  if (!PYTHONS.has(argv[0] ?? "") || argv[1] !== "-m" || argv[2] !== "http.server")
    return undefined;
  let port = 8000;
  let dir = cwd;
  for (let i = 3; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--directory" || a === "-d") dir = posix.resolve(cwd, argv[++i] ?? ".");
    else if (a.startsWith("--directory=")) dir = posix.resolve(cwd, a.slice(12));
    else if (a === "--bind" || a === "-b") i++;
    else if (/^\d+$/.test(a)) port = Number(a);
  }
  return { port, dir };
}

/** Starts a service as a process of the table; stderr is Python's when the port is taken. */
function startServer(
  server: { port: number; dir: string },
  argv: readonly string[],
  jobs: ShellJobs,
): { pid: number } | { stderr: string } {
  const now = jobs.now();
  for (const p of jobs.table.values())
    if (p.serves?.port === server.port && (p.endsAt === undefined || now < p.endsAt))
      return { stderr: "OSError: [Errno 98] Address already in use\n" };
  const pid = jobs.nextPid();
  jobs.table.set(pid, { pid, command: argv.join(" "), startedAt: now, serves: server });
  return { pid };
}

/** A `sleep` operand in ms, or undefined when it is not a valid interval. */
function sleepMs(args: readonly string[]): number | undefined {
  const s = Number(args[0]);
  return args.length === 1 && Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
}

function alive(jobs: ShellJobs, pid: number): boolean {
  const p = jobs.table.get(pid);
  return p !== undefined && (p.endsAt === undefined || jobs.now() < p.endsAt);
}

/** kill [-SIGNAL] PID...: `-0` only checks that each process exists. */
function kill(args: readonly string[], jobs: ShellJobs): Result {
  const signal = args[0]?.startsWith("-") ? args[0].slice(1) : undefined;
  const pids = signal === undefined ? args : args.slice(1);
  if (pids.length === 0)
    return fail(2, "kill: usage: kill [-s sigspec | -n signum | -sigspec] pid\n");
  let stderr = "";
  for (const arg of pids) {
    const pid = Number(arg);
    if (!/^\d+$/.test(arg)) stderr += `bash: kill: ${arg}: arguments must be process or job IDs\n`;
    else if (!alive(jobs, pid)) stderr += `bash: kill: (${arg}) - No such process\n`;
    else if (signal !== "0") jobs.table.delete(pid);
  }
  return stderr === "" ? ok() : fail(1, stderr);
}

/** What a command runs with: the sandbox's files, its shell, the jobs, and NAME=value before it. */
interface Context {
  files: Map<string, Buffer>;
  state: ShellState;
  jobs: ShellJobs;
  /** The previous command's exit code, for a bare `exit`. */
  last: number;
  extra: ReadonlyArray<[string, string]>;
}

function cat(args: readonly string[], c: Context, stdin: Buffer | undefined): Result {
  if (args.length === 0) return ok(stdin?.toString("latin1") ?? "");
  let stdout = "";
  let stderr = "";
  let code = 0;
  for (const f of args) {
    const content = c.files.get(posix.resolve(c.state.cwd, f));
    if (content === undefined) {
      stderr += `cat: ${f}: No such file or directory\n`;
      code = 1;
    } else {
      stdout += content.toString("latin1");
    }
  }
  return { code, stdout, stderr };
}

/** `env [NAME=VALUE...]`: the environment; with a command, runs it with those added. */
function env(args: readonly string[], c: Context, stdin: Buffer | undefined): Result {
  const { extra, command } = envOperands(args);
  const all = [...c.extra, ...extra];
  if (command[0]?.startsWith("-"))
    return fail(125, `env: option '${command[0]}' is not supported by the simulator\n`);
  if (command.length > 0) return run(command, { ...c, extra: all }, stdin);
  return ok(
    environ(c.state, all)
      .map(([name, value]) => `${name}=${value}\n`)
      .join(""),
  );
}

function run(argv: readonly string[], c: Context, stdin: Buffer | undefined): Result {
  const [name, ...args] = argv;
  switch (name) {
    case undefined:
    case "true":
    case ":":
      return ok();
    case "false":
      return fail(1, "");
    case "pwd":
      return ok(`${c.state.cwd}\n`);
    case "cd":
      return cd(args, c.state, c.files);
    case "export":
      return exportVars(args, c.state);
    case "unset":
      return unset(args, c.state);
    case "env":
      return env(args, c, stdin);
    case "echo": {
      const noNewline = args[0] === "-n";
      const words = noNewline ? args.slice(1) : args;
      return ok(words.join(" ") + (noNewline ? "" : "\n"));
    }
    case "cat":
      return cat(args, c, stdin);
    case "sleep": {
      const ms = sleepMs(args);
      if (ms === undefined) return fail(1, `sleep: invalid time interval '${args[0] ?? ""}'\n`);
      return { ...ok(), sleepMs: ms };
    }
    case "kill":
      return kill(args, c.jobs);
    case "exit": {
      const n = args[0] === undefined ? c.last : Number.parseInt(args[0], 10);
      return { code: Number.isNaN(n) ? 2 : n & 255, stdout: "", stderr: "", exit: true };
    }
    default:
      return fail(127, `bash: ${name}: command not found\n`);
  }
}

/** A script's own job table, for a caller that keeps none. */
function ownJobs(): ShellJobs {
  let pid = 1000;
  return { table: new Map(), nextPid: () => pid++, now: () => 0 };
}

/** `cmd` with its output files made absolute against `cwd`, as bash opens them before it runs. */
function resolveSinks(cmd: ShellCommand, cwd: string): ShellCommand {
  const abs = (sink: Sink): Sink =>
    "path" in sink ? { ...sink, path: posix.resolve(cwd, sink.path) } : sink;
  const stdout = abs(cmd.stdout);
  return { ...cmd, stdout, stderr: cmd.stderr === cmd.stdout ? stdout : abs(cmd.stderr) };
}

/** Opens the command's output files as bash does before it runs: `>` truncates, `>>` creates. */
function open(files: Map<string, Buffer>, cmd: ShellCommand): void {
  for (const sink of [cmd.stdout, cmd.stderr]) {
    if (!("path" in sink) || sink.path === "/dev/null") continue;
    if (!sink.append || !files.has(sink.path)) files.set(sink.path, Buffer.alloc(0));
  }
}

/** Writes `data` where `sink` points: a stream op to yield, or appended to a file. */
function route(files: Map<string, Buffer>, sink: Sink, data: Buffer): ShellOp | undefined {
  if (data.byteLength === 0) return undefined;
  if ("fd" in sink) return { kind: sink.fd === 1 ? "stdout" : "stderr", data };
  if (sink.path !== "/dev/null")
    files.set(sink.path, Buffer.concat([files.get(sink.path) ?? Buffer.alloc(0), data]));
  return undefined;
}

/**
 * Starts `cmd &`: a `sleep` becomes a process of the table, alive for its interval on the jobs'
 * clock, which holds the run's streams that long unless its output is redirected to files.
 */
function startJob(
  cmd: ShellCommand,
  jobs: ShellJobs,
  cwd: string,
): { pid: number; running: boolean; holdMs: number } {
  const holds = "fd" in cmd.stdout || "fd" in cmd.stderr;
  const server = httpServerOf(cmd.argv, cwd);
  if (server) {
    const started = startServer(server, cmd.argv, jobs);
    // A service that could not bind exits at once; its job is still a pid.
    if (!("pid" in started)) return { pid: jobs.nextPid(), running: false, holdMs: 0 };
    return { pid: started.pid, running: true, holdMs: holds ? SERVE_HOLD_MS : 0 };
  }
  const pid = jobs.nextPid();
  const ms = cmd.argv[0] === "sleep" ? sleepMs(cmd.argv.slice(1)) : undefined;
  if (ms === undefined) return { pid, running: false, holdMs: 0 };
  const now = jobs.now();
  jobs.table.set(pid, { pid, command: cmd.argv.join(" "), startedAt: now, endsAt: now + ms });
  return { pid, running: true, holdMs: holds ? ms : 0 };
}

/** What a run carries from command to command. */
interface RunState {
  code: number;
  /** The pid of the last background job, for `$!`. */
  lastJob: string;
  /** A background job writing to the run's streams holds them open until it ends, as on envd. */
  holdMs: number;
}

/** Runs `script`, yielding output and sleeps; returns the exit code. */
export function* runScript(script: string, sh: ShellEnv): Generator<ShellOp, number> {
  let steps: ReturnType<typeof parseScript>;
  try {
    steps = parseScript(script);
  } catch (err) {
    if (!(err instanceof ShellSyntaxError)) throw err;
    yield { kind: "stderr", data: Buffer.from(`bash: -c: line 1: ${err.message}\n`) };
    return 2;
  }
  const jobs = sh.jobs ?? ownJobs();
  // One shell for the whole command line: a cd or an export lasts to its end, and no further.
  const state = shellState(sh.cwd, sh.env);
  const r: RunState = { code: 0, lastJob: "", holdMs: 0 };
  const lookup = (name: string) =>
    name === "!" ? r.lastJob : name === "?" ? String(r.code) : state.vars.get(name);
  for (const { connector, command: raw } of steps) {
    if ((connector === "&&" && r.code !== 0) || (connector === "||" && r.code === 0)) continue;
    const command = expandCommand(raw, lookup);
    // A background job is a subshell: its cd and variables stay in it.
    const shell = command.background ? subshell(state) : state;
    const c = { files: sh.files, state: shell, jobs, last: r.code, extra: command.assignments };
    if (yield* runCommand(resolveSinks(command, shell.cwd), c, r)) break;
  }
  if (r.holdMs > 0) yield { kind: "sleep", ms: r.holdMs };
  return r.code;
}

/** Runs one command, yielding its output and sleeps and updating `r`; true when it was `exit`. */
function* runCommand(command: ShellCommand, c: Context, r: RunState): Generator<ShellOp, boolean> {
  const { files, state } = c;
  let stdin: Buffer | undefined;
  if (command.stdin !== undefined) {
    const path = posix.resolve(state.cwd, command.stdin);
    stdin = path === "/dev/null" ? Buffer.alloc(0) : files.get(path);
    if (stdin === undefined) {
      r.code = 1;
      const msg = `bash: ${command.stdin}: No such file or directory\n`;
      yield { kind: "stderr", data: Buffer.from(msg) };
      return false;
    }
  }
  open(files, command);
  if (command.argv.length === 0) {
    // NAME=value alone sets a variable of the shell (exported if it already was).
    for (const [name, value] of command.assignments) assign(state, name, value);
    r.code = 0;
    return false;
  }
  if (command.background) {
    const job = startJob(command, c.jobs, state.cwd);
    r.lastJob = String(job.pid);
    r.code = 0;
    if (job.running) {
      r.holdMs = Math.max(r.holdMs, job.holdMs);
      return false;
    }
    // Any other job finishes at once: its output is written now, its exit code is not ours.
  }
  const server = command.background ? undefined : httpServerOf(command.argv, state.cwd);
  if (server) {
    // In the foreground a service runs until killed: its run's stream stays open meanwhile.
    const started = startServer(server, command.argv, c.jobs);
    r.code = "pid" in started ? 0 : 1;
    if ("pid" in started) yield { kind: "sleep", ms: SERVE_HOLD_MS };
    else {
      const err = route(files, command.stderr, Buffer.from(started.stderr));
      if (err) yield err;
    }
    return false;
  }
  const res = run(command.argv, c, stdin);
  if (!command.background) r.code = res.code;
  if (res.sleepMs !== undefined) yield { kind: "sleep", ms: res.sleepMs };
  // Output bytes keep what cat read verbatim (latin1 round-trips any byte).
  const encoding = command.argv[0] === "cat" ? "latin1" : "utf8";
  const out = route(files, command.stdout, Buffer.from(res.stdout, encoding));
  if (out) yield out;
  const err = route(files, command.stderr, Buffer.from(res.stderr));
  if (err) yield err;
  return res.exit === true && !command.background;
}

/** Quotes one argument for the parser (used to run an argv that is not a bash -c script). */
export function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`;
}
