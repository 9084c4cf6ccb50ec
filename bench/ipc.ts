// The bench's process boundary: the parent forks each part (simulator, exporter, bare loop) as a
// child, compiled JS on plain node or TypeScript under tsx, and calls it over Node's IPC channel,
// so each one's RSS and event loop are its own.
import { fork } from "node:child_process";

type Json = Record<string, unknown>;
/** One command a child serves: its arguments in, a JSON-able answer out. */
export type Handler = (args: Json) => Promise<unknown> | unknown;

interface Request {
  id: number;
  cmd: string;
  args: Json;
}
interface Reply {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

/** A running child and the commands it serves. */
export interface BenchChild<R extends Json = Json> {
  /** What the child said when it became ready (its URL, start-up RSS, ...). */
  readonly ready: R;
  readonly pid: number;
  call<T = Json>(cmd: string, args?: Json): Promise<T>;
  /** Asks the child to exit, and kills it if it has not within a few seconds. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 5_000;

/**
 * Forks `script` with --expose-gc and resolves once it has sent its ready message. A `.ts` script
 * runs under tsx's loader; compiled `.js` runs on plain node, as the exporter does in production.
 */
export async function forkChild<R extends Json>(
  script: string,
  args: string[] = [],
  /** Node flags, e.g. the production image's heap settings. */
  nodeFlags: readonly string[] = [],
): Promise<BenchChild<R>> {
  const loader = script.endsWith(".ts") ? ["--import", "tsx"] : [];
  const child = fork(script, args, {
    execArgv: [...loader, "--expose-gc", ...nodeFlags],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = await new Promise<R>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${script} not ready within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    child.once("exit", (code) => reject(new Error(`${script} exited (${code}) before ready`)));
    child.once("message", (m) => {
      clearTimeout(timer);
      resolve((m as { ready: R }).ready);
    });
  });
  child.on("message", (m) => {
    const reply = m as Reply;
    const p = pending.get(reply.id);
    if (!p) return;
    pending.delete(reply.id);
    if (reply.ok) p.resolve(reply.result);
    else p.reject(new Error(`${script}: ${reply.error}`));
  });
  child.once("exit", (code) => {
    for (const p of pending.values()) p.reject(new Error(`${script} exited (${code})`));
    pending.clear();
  });
  return {
    ready,
    pid: child.pid ?? -1,
    call<T>(cmd: string, callArgs: Json = {}): Promise<T> {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, cmd, args: callArgs } satisfies Request);
      });
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.send({ id: 0, cmd: "exit", args: {} } satisfies Request);
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Child side: announces `ready`, then answers the parent's commands until it sends "exit". */
export function serveParent(
  ready: Json,
  handlers: Record<string, Handler>,
  onExit: () => Promise<void>,
): void {
  const send = (m: Json): void => {
    process.send?.(m);
  };
  process.on("message", async (m) => {
    const req = m as Request;
    if (req.cmd === "exit") {
      await onExit();
      process.exit(0);
    }
    const handler = handlers[req.cmd];
    try {
      if (!handler) throw new Error(`unknown command ${req.cmd}`);
      send({ id: req.id, ok: true, result: await handler(req.args) } satisfies Reply);
    } catch (err) {
      send({ id: req.id, ok: false, error: err instanceof Error ? err.message : String(err) });
    }
  });
  // The parent going away (crash, Ctrl-C) takes the child with it.
  process.on("disconnect", () => {
    void onExit().finally(() => process.exit(0));
  });
  send({ ready });
}

/** This process's memory in MB (rss, V8 heap, off-heap). */
export function memoryMB(): Record<string, number> {
  const m = process.memoryUsage();
  const mb = (b: number) => b / 1048576;
  return {
    rss: mb(m.rss),
    heapUsed: mb(m.heapUsed),
    heapTotal: mb(m.heapTotal),
    external: mb(m.external),
    arrayBuffers: mb(m.arrayBuffers),
  };
}

/** Milliseconds since the epoch, to sub-millisecond precision; comparable across processes. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
