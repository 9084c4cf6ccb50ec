// A tiny bash stand-in: echo, cat, sleep, kill, exit, true, false, pwd, `python -m http.server`
// (a service on a sandbox port), background jobs (`&`, `$!`), and redirections into the
// sandbox's in-memory files. A generator, so sleeps pause the caller and
// side effects stay in order.
import { posix } from "node:path";
import type { SimProcess } from "./model.js";
import {
  LAST_JOB,
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
  cwd: string;
  env: Readonly<Record<string, string>>;
  /** Default: a table of this script's own, from pid 1000 on a clock that stands still. */
  jobs?: ShellJobs;
}

interface Result {
  code: number;
  stdout: string;
  stderr: string;
  sleepMs?: number;
  exit?: boolean;
}

const ok = (stdout = ""): Result => ({ code: 0, stdout, stderr: "" });
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
const fail = (code: number, stderr: string): Result => ({ code, stdout: "", stderr });

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

function run(
  argv: readonly string[],
  sh: ShellEnv,
  jobs: ShellJobs,
  stdin: Buffer | undefined,
  last: number,
): Result {
  const [name, ...args] = argv;
  switch (name) {
    case undefined:
    case "true":
    case ":":
      return ok();
    case "false":
      return fail(1, "");
    case "pwd":
      return ok(`${sh.cwd}\n`);
    case "echo": {
      const noNewline = args[0] === "-n";
      const words = noNewline ? args.slice(1) : args;
      return ok(words.join(" ") + (noNewline ? "" : "\n"));
    }
    case "cat": {
      if (args.length === 0) return ok(stdin?.toString("latin1") ?? "");
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
      const ms = sleepMs(args);
      if (ms === undefined) return fail(1, `sleep: invalid time interval '${args[0] ?? ""}'\n`);
      return { ...ok(), sleepMs: ms };
    }
    case "kill":
      return kill(args, jobs);
    case "exit": {
      const n = args[0] === undefined ? last : Number.parseInt(args[0], 10);
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

/** Opens the command's output files as bash does before it runs: `>` truncates, `>>` creates. */
function open(sh: ShellEnv, cmd: ShellCommand): void {
  for (const sink of [cmd.stdout, cmd.stderr]) {
    if (!("path" in sink)) continue;
    const path = posix.resolve(sh.cwd, sink.path);
    if (path === "/dev/null") continue;
    if (!sink.append || !sh.files.has(path)) sh.files.set(path, Buffer.alloc(0));
  }
}

/** Writes `data` where `sink` points: a stream op to yield, or appended to a file. */
function route(sh: ShellEnv, sink: Sink, data: Buffer): ShellOp | undefined {
  if (data.byteLength === 0) return undefined;
  if ("fd" in sink) return { kind: sink.fd === 1 ? "stdout" : "stderr", data };
  const path = posix.resolve(sh.cwd, sink.path);
  if (path !== "/dev/null")
    sh.files.set(path, Buffer.concat([sh.files.get(path) ?? Buffer.alloc(0), data]));
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
  const jobs = sh.jobs ?? ownJobs();
  let code = 0;
  let lastJob = "";
  // A background job writing to the run's streams holds them open until it ends, as on envd.
  let holdMs = 0;
  const fill = (s: string) => s.replaceAll(LAST_JOB, lastJob);
  for (const { connector, command: parsed } of steps) {
    if ((connector === "&&" && code !== 0) || (connector === "||" && code === 0)) continue;
    const command = withJob(parsed, fill);
    let stdin: Buffer | undefined;
    if (command.stdin !== undefined) {
      const path = posix.resolve(sh.cwd, command.stdin);
      stdin = path === "/dev/null" ? Buffer.alloc(0) : sh.files.get(path);
      if (stdin === undefined) {
        code = 1;
        yield {
          kind: "stderr",
          data: Buffer.from(`bash: ${command.stdin}: No such file or directory\n`),
        };
        continue;
      }
    }
    open(sh, command);
    if (command.background) {
      const job = startJob(command, jobs, sh.cwd);
      lastJob = String(job.pid);
      code = 0;
      if (job.running) {
        holdMs = Math.max(holdMs, job.holdMs);
        continue;
      }
      // Any other job finishes at once: its output is written now, its exit code is not ours.
    }
    const server = command.background ? undefined : httpServerOf(command.argv, sh.cwd);
    if (server) {
      // In the foreground a service runs until killed: its run's stream stays open meanwhile.
      const started = startServer(server, command.argv, jobs);
      if ("pid" in started) {
        yield { kind: "sleep", ms: SERVE_HOLD_MS };
        code = 0;
      } else {
        code = 1;
        const err = route(sh, command.stderr, Buffer.from(started.stderr));
        if (err) yield err;
      }
      continue;
    }
    // Output bytes keep what cat read verbatim (latin1 round-trips any byte).
    const r = run(command.argv, sh, jobs, stdin, code);
    if (!command.background) code = r.code;
    if (r.sleepMs !== undefined) yield { kind: "sleep", ms: r.sleepMs };
    const out = route(
      sh,
      command.stdout,
      Buffer.from(r.stdout, command.argv[0] === "cat" ? "latin1" : "utf8"),
    );
    if (out) yield out;
    const err = route(sh, command.stderr, Buffer.from(r.stderr));
    if (err) yield err;
    if (r.exit && !command.background) break;
  }
  if (holdMs > 0) yield { kind: "sleep", ms: holdMs };
  return code;
}

/** The command with `$!` filled in where it was parsed. */
function withJob(cmd: ShellCommand, fill: (s: string) => string): ShellCommand {
  const sink = (s: Sink): Sink => ("path" in s ? { ...s, path: fill(s.path) } : s);
  return {
    ...cmd,
    argv: cmd.argv.map(fill),
    stdout: sink(cmd.stdout),
    stderr: cmd.stderr === cmd.stdout ? sink(cmd.stdout) : sink(cmd.stderr),
    ...(cmd.stdin !== undefined ? { stdin: fill(cmd.stdin) } : {}),
  };
}

/** Quotes one argument for the parser (used to run an argv that is not a bash -c script). */
export function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", "'\\''")}'`;
}
