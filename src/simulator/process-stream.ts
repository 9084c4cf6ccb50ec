// POST /process.Process/Start: a Connect server stream of JSON envelopes, timed from request arrival.
import type { IncomingMessage, ServerResponse } from "node:http";
import { gunzipSync } from "node:zlib";
import { z } from "zod";
import { encodeJsonEnvelope, FLAG_COMPRESSED, FLAG_END_STREAM } from "../platform/data/envelope.js";
import type { SimContext } from "./context.js";
import { basicAuthUser, DEFAULT_USER, type EnvdRules, homeOf } from "./envd.js";
import { BodyTooLargeError, readBody, sendError } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { runScript, shellQuote } from "./shell.js";

const MAX_REQUEST_BYTES = 1024 * 1024;
/** The last stretch of a wait is polled, since timers fire late by a millisecond or two. */
const PRECISE_WINDOW_MS = 2;
const SHELLS = new Set(["/bin/bash", "bash", "/bin/sh", "sh", "/usr/bin/bash"]);

const StartRequest = z.object({
  process: z.object({
    cmd: z.string().min(1),
    args: z.array(z.string()).optional(),
    envs: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
  }),
});
type StartRequest = z.infer<typeof StartRequest>;

type Outcome = "ok" | "deadline" | "closed";

/** Waits for absolute monotonic times; stop() wakes the current wait with a reason. */
class Timeline {
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private wake: ((o: Outcome) => void) | undefined;
  private stopped: Outcome | undefined;

  until(target: number): Promise<Outcome> {
    if (this.stopped) return Promise.resolve(this.stopped);
    if (target - performance.now() <= 0) return Promise.resolve("ok");
    return new Promise((resolve) => {
      this.wake = resolve;
      this.arm(target);
    });
  }

  /** setTimeout fires up to a few ms late, so it wakes early and setImmediate finishes the wait. */
  private arm(target: number): void {
    const ms = target - performance.now();
    if (ms <= 0) {
      const wake = this.wake;
      this.wake = undefined;
      wake?.("ok");
    } else if (ms > PRECISE_WINDOW_MS) {
      this.timer = setTimeout(() => this.arm(target), ms - PRECISE_WINDOW_MS);
    } else {
      this.immediate = setImmediate(() => this.arm(target));
    }
  }

  stop(reason: Outcome): void {
    if (this.stopped) return;
    this.stopped = reason;
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.wake?.(reason);
    this.wake = undefined;
  }

  get outcome(): Outcome {
    return this.stopped ?? "ok";
  }
}

/** Decodes the single request envelope (flags, big-endian length, JSON, optional gzip). */
function decodeRequest(body: Buffer, encoding: string | undefined): StartRequest {
  if (body.byteLength < 5) throw new Error("request envelope shorter than its 5-byte header");
  const flags = body.readUInt8(0);
  const length = body.readUInt32BE(1);
  if (body.byteLength !== 5 + length) {
    throw new Error(`request envelope declares ${length} bytes but carries ${body.byteLength - 5}`);
  }
  let payload = body.subarray(5);
  if (flags & FLAG_COMPRESSED) {
    if (encoding !== "gzip")
      throw new Error("compressed request without Connect-Content-Encoding: gzip");
    payload = gunzipSync(payload);
  }
  if (flags & FLAG_END_STREAM) throw new Error("request envelope has the end-of-stream flag");
  return StartRequest.parse(JSON.parse(payload.toString("utf8")));
}

/** The bash script a start request runs: `bash -l -c <script>`, or the argv quoted. */
function scriptOf(req: StartRequest): string {
  const { cmd, args = [] } = req.process;
  const c = args.indexOf("-c");
  if (SHELLS.has(cmd) && c >= 0) return args[c + 1] ?? "";
  return [cmd, ...args].map(shellQuote).join(" ");
}

function headerNumber(req: IncomingMessage, name: string): number | undefined {
  const raw = req.headers[name];
  const n = typeof raw === "string" ? Number(raw) : Number.NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * The user a start runs as, or the end-of-stream error: envd authenticates `Authorization: Basic
 * base64(user:)` and, below 0.4.0, has no default user to fall back on.
 */
function processUser(
  rules: EnvdRules,
  req: IncomingMessage,
): string | { code: string; message: string } {
  const header = req.headers.authorization;
  const named = basicAuthUser(header);
  if (named === undefined) {
    if (rules.userRequired) return { code: "unauthenticated", message: "no user specified" };
    return DEFAULT_USER;
  }
  if (homeOf(named) === undefined)
    return { code: "unauthenticated", message: `invalid username: '${named}'` };
  return named;
}

/** Serves one Start stream; `arrival` is performance.now() when the request came in. */
export async function startProcess(
  ctx: SimContext,
  sandbox: SimSandbox,
  rules: EnvdRules,
  req: IncomingMessage,
  res: ServerResponse,
  arrival: number,
): Promise<void> {
  const body = await startBody(req, res);
  if (body === undefined) return;
  const knobs = { ...ctx.faults.stream };
  const accepts = /\bgzip\b/.test(String(req.headers["connect-accept-encoding"] ?? ""));
  const compress = knobs.compress ?? accepts;
  const write = (value: unknown, endStream = false) =>
    res.write(encodeJsonEnvelope(value, { compress, endStream }));
  const finish = (error?: { code: string; message: string }) => {
    write(error ? { error } : {}, true);
    res.end();
  };

  // Connect streams answer 200 and put errors in the end-of-stream frame.
  res.writeHead(200, {
    "content-type": "application/connect+json",
    ...(compress && { "connect-content-encoding": "gzip" }),
  });
  res.flushHeaders();

  let request: StartRequest;
  try {
    request = decodeRequest(body, req.headers["connect-content-encoding"] as string | undefined);
  } catch (err) {
    return finish({
      code: "invalid_argument",
      message: err instanceof Error ? err.message : "bad request",
    });
  }
  const user = processUser(rules, req);
  if (typeof user !== "string") return finish(user);

  const timeline = new Timeline();
  res.on("close", () => timeline.stop("closed"));
  const timeoutMs = headerNumber(req, "connect-timeout-ms");
  const timers: StreamTimers = {};
  if (timeoutMs !== undefined)
    timers.deadline = setTimeout(
      () => timeline.stop("deadline"),
      arrival + timeoutMs - performance.now(),
    );
  const pingS = headerNumber(req, "keepalive-ping-interval");
  const keepaliveMs = knobs.keepaliveIntervalMs ?? (pingS === undefined ? undefined : pingS * 1000);
  const stream: Stream = { ctx, knobs, res, write, finish, timeline, timers, keepaliveMs };
  try {
    await serveStream(stream, sandbox, request, user, arrival);
  } finally {
    stopTimers(timers);
  }
}

/** The Start request's body, or undefined once answered 415 or 413. */
async function startBody(req: IncomingMessage, res: ServerResponse): Promise<Buffer | undefined> {
  const contentType = req.headers["content-type"] ?? "";
  if (!contentType.startsWith("application/connect+json")) {
    sendError(res, 415, `unsupported content type '${contentType}'`);
    return undefined;
  }
  try {
    return await readBody(req, MAX_REQUEST_BYTES);
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
      sendError(res, 413, err.message);
      return undefined;
    }
    throw err;
  }
}

/** The timers of one stream: its Connect deadline and its keepalives. */
interface StreamTimers {
  deadline?: NodeJS.Timeout;
  keepalive?: NodeJS.Timeout;
}

function stopTimers(timers: StreamTimers): void {
  clearTimeout(timers.deadline);
  clearInterval(timers.keepalive);
}

/** One Start stream being answered: its faults, its frames out and its virtual schedule. */
interface Stream {
  ctx: SimContext;
  knobs: SimContext["faults"]["stream"];
  res: ServerResponse;
  write: (value: unknown, endStream?: boolean) => boolean;
  finish: (error?: { code: string; message: string }) => void;
  timeline: Timeline;
  timers: StreamTimers;
  keepaliveMs: number | undefined;
}

/** The stream's events: start, the script's output on the virtual schedule, then its end. */
async function serveStream(
  s: Stream,
  sandbox: SimSandbox,
  request: StartRequest,
  user: string,
  arrival: number,
): Promise<void> {
  const { ctx, knobs, res, write, finish, timeline } = s;
  const home = homeOf(user) as string;
  const onStop = (outcome: Outcome): void => {
    stopTimers(s.timers);
    if (outcome === "deadline")
      finish({ code: "deadline_exceeded", message: "the operation timed out" });
  };
  let at = arrival + (knobs.startDelayMs ?? 0);
  if ((await timeline.until(at)) !== "ok") return onStop(timeline.outcome);
  write({ event: { start: { pid: ctx.nextPid++ } } });
  if (knobs.malformedEnvelope) {
    // A header declaring a 4 GiB payload: a decoder must refuse it, not buffer it.
    res.end(Buffer.from([0x00, 0xff, 0xff, 0xff, 0xff, 0x7b, 0x7d]));
    return;
  }
  if (s.keepaliveMs !== undefined) {
    s.timers.keepalive = setInterval(() => write({ event: { keepalive: {} } }), s.keepaliveMs);
  }
  at += knobs.firstDataDelayMs ?? 0;
  if ((await timeline.until(at)) !== "ok") return onStop(timeline.outcome);

  const env = {
    HOME: home,
    USER: user,
    PWD: request.process.cwd ?? home,
    ...request.process.envs,
  };
  const shell = runScript(scriptOf(request), {
    files: sandbox.files,
    cwd: env.PWD,
    env,
    jobs: {
      table: sandbox.processes,
      nextPid: () => ctx.nextPid++,
      now: () => ctx.clock.now(),
    },
  });
  let step = shell.next();
  while (!step.done) {
    const op = step.value;
    if (op.kind === "sleep") {
      // Times follow the virtual schedule, so timer lateness never accumulates.
      at += op.ms;
      if ((await timeline.until(at)) !== "ok") return onStop(timeline.outcome);
    } else {
      const data =
        op.kind === "stdout" && knobs.wrongStdout ? Buffer.from("unexpected output\n") : op.data;
      write({ event: { data: { [op.kind]: data.toString("base64") } } });
    }
    step = shell.next();
  }
  at += knobs.endDelayMs ?? 0;
  if ((await timeline.until(at)) !== "ok") return onStop(timeline.outcome);
  clearInterval(s.timers.keepalive);
  if (knobs.endStreamError) return finish(knobs.endStreamError);
  endStream(s, step.value);
}

/** The end event; protobuf JSON omits zero values: a clean exit carries no exitCode. */
function endStream(s: Stream, exitCode: number): void {
  const end =
    exitCode === 0
      ? { exited: true, status: "exit status 0" }
      : { exitCode, exited: true, status: `exit status ${exitCode}` };
  s.write({ event: { end } });
  if (s.knobs.truncate) s.res.end();
  else s.finish();
}
