// The readable trace of one probe run (`/probe?debug=true`): every platform call with its outcome
// and timing, every phase and every stream event, as blackbox_exporter's debug output.
import { errorMessage } from "../util/errors.js";
import { MAX_FAILURE_TEXT } from "./probe-error.js";
import type { ProbeResult } from "./runner.js";

/** Calls and stream events kept at most; a run that sends more is cut, and says so. */
const MAX_LINES = 500;
/** Characters of an HTTP answer's body shown. */
const SHOWN_BODY_CHARS = 200;
/** Header names whose values never reach the trace (the traffic token's among them). */
const SECRET_HEADER = /token|authorization|cookie|secret|key|password|signature/i;

/** Records what one run did, with times relative to its start. */
export class ProbeTrace {
  private readonly lines: string[] = [];
  private dropped = 0;
  private readonly t0: number;

  constructor(private readonly monotonic: () => number) {
    this.t0 = monotonic();
  }

  /** Adds one line, stamped with the ms since the run began. */
  add(text: string): void {
    if (this.lines.length >= MAX_LINES) {
      this.dropped++;
      return;
    }
    const at = (this.monotonic() - this.t0).toFixed(1).padStart(9);
    this.lines.push(`${at} ms  ${text}`);
  }

  /** Wraps every method of `target` so each call is traced with its outcome and duration. */
  wrap<T extends object>(target: T, channel: string): T {
    return new Proxy(target, {
      get: (t, key, receiver) => {
        const v = Reflect.get(t, key, receiver);
        if (typeof v !== "function" || typeof key !== "string") return v;
        return (...args: unknown[]) => this.call(channel, key, v.bind(t), args);
      },
    });
  }

  /** The trace as text: the calls, then the result the metrics report. */
  render(module: string, result: ProbeResult): string {
    const out = [`Probe of module ${module}`, ...this.lines];
    if (this.dropped) out.push(`... ${this.dropped} more lines not shown`);
    out.push("", `Result: ${result.success ? "success" : "failure"}`);
    out.push(`Duration: ${result.durationSeconds.toFixed(3)} s`);
    if (result.sandboxId) out.push(`Sandbox: ${result.sandboxId}`);
    for (const [phase, s] of Object.entries(result.phases))
      out.push(`Phase ${phase}: ${(s * 1000).toFixed(1)} ms`);
    for (const [point, s] of Object.entries(result.stream.points))
      out.push(`Stream ${point}: ${(s * 1000).toFixed(1)} ms`);
    out.push(`Keepalives: ${result.stream.keepalives}`);
    if (result.http)
      out.push(
        `HTTP first byte: ${(result.http.firstByte * 1000).toFixed(1)} ms, total: ${(result.http.total * 1000).toFixed(1)} ms`,
      );
    if (result.wakeSeconds !== undefined)
      out.push(`Wake by traffic: ${(result.wakeSeconds * 1000).toFixed(1)} ms`);
    for (const step of result.unsupported ?? []) out.push(`Unsupported step: ${step}`);
    for (const f of result.failures) out.push(`Failed ${f.phase} (${f.reason}): ${f.message}`);
    if (result.leftBehind) out.push(`Left behind: ${result.leftBehind} (the orphan sweep retries)`);
    if (result.terminatePending)
      out.push(
        "Terminate: still running after this answer (its outcome goes to /status and the log)",
      );
    return `${out.join("\n")}\n`;
  }

  private call(
    channel: string,
    name: string,
    fn: (...args: unknown[]) => unknown,
    args: unknown[],
  ): unknown {
    const what = `${channel}.${name}(${describeArgs(args)})`;
    const begin = this.monotonic();
    const took = () => `${(this.monotonic() - begin).toFixed(1)} ms`;
    let value: unknown;
    try {
      value = fn(...args);
    } catch (err) {
      this.add(`${what} -> ${outcome(err)} after ${took()}`);
      throw err;
    }
    if (isAsyncIterable(value)) return this.stream(what, value, took);
    if (!(value instanceof Promise)) return value;
    this.add(`${what} sent`);
    return value.then(
      (v) => {
        const answer = describeAnswer(v);
        this.add(`${what} -> ${answer ?? "ok"} after ${took()}`);
        return v;
      },
      (err: unknown) => {
        this.add(`${what} -> ${outcome(err)} after ${took()}`);
        throw err;
      },
    );
  }

  private async *stream(
    what: string,
    source: AsyncIterable<unknown>,
    took: () => string,
  ): AsyncGenerator<unknown> {
    this.add(`${what} stream opened`);
    try {
      for await (const item of source) {
        this.add(`  ${describeEvent(item)}`);
        yield item;
      }
      this.add(`${what} stream closed after ${took()}`);
    } catch (err) {
      this.add(`${what} stream -> ${outcome(err)} after ${took()}`);
      throw err;
    }
  }
}

/** The ids and paths a probe passes (strings and numbers); objects are named, not dumped. */
function describeArgs(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === "string") return JSON.stringify(a.length > 80 ? `${a.slice(0, 80)}...` : a);
      if (typeof a === "number" || typeof a === "boolean") return String(a);
      if (a === undefined || a === null) return String(a);
      if (a instanceof AbortSignal) return "signal";
      if (Buffer.isBuffer(a)) return `${a.length} bytes`;
      if (isPortRequest(a)) return describePortRequest(a);
      if (typeof a === "object" && "id" in a)
        return `{id: ${JSON.stringify((a as { id: unknown }).id)}}`;
      return "{...}";
    })
    .join(", ");
}

interface TracedPortRequest {
  port: number;
  path: string;
  method: string;
  headers?: Record<string, string>;
  trafficToken?: string;
}

function isPortRequest(a: object): a is TracedPortRequest {
  const r = a as Partial<TracedPortRequest>;
  return typeof r.port === "number" && typeof r.path === "string" && typeof r.method === "string";
}

/** An HTTP request to a sandbox port: method, port, path and headers, secret values redacted. */
function describePortRequest(r: TracedPortRequest): string {
  const headers: Record<string, string> = { ...r.headers };
  if (r.trafficToken !== undefined) headers["e2b-traffic-access-token"] = r.trafficToken;
  return `${r.method} :${r.port}${r.path} ${describeHeaders(headers)}`;
}

function describeHeaders(h: Readonly<Record<string, string>>): string {
  const parts = Object.entries(h).map(
    ([k, v]) => `${k}: ${SECRET_HEADER.test(k) ? "[REDACTED]" : v}`,
  );
  return `{${parts.join(", ")}}`;
}

/** An HTTP answer (status, headers, the head of its body); undefined for any other value. */
function describeAnswer(v: unknown): string | undefined {
  const a = v as { status?: unknown; headers?: unknown; body?: unknown } | null;
  if (typeof a?.status !== "number" || !Buffer.isBuffer(a.body) || typeof a.headers !== "object")
    return undefined;
  const text = a.body.toString("utf8").replace(/\s+/g, " ").trim();
  const shown = text.length > SHOWN_BODY_CHARS ? `${text.slice(0, SHOWN_BODY_CHARS)}...` : text;
  const headers = describeHeaders(a.headers as Record<string, string>);
  return `HTTP ${a.status} ${headers} ${a.body.length} bytes ${JSON.stringify(shown)}`;
}

function describeEvent(item: unknown): string {
  const event = (item as { event?: { type?: unknown } } | null)?.event;
  const type = typeof event?.type === "string" ? event.type : "item";
  if (type !== "end") return `stream event ${type}`;
  const end = event as { exitCode?: unknown; error?: unknown };
  const error = typeof end.error === "string" ? `, error ${end.error}` : "";
  return `stream event end (exit ${String(end.exitCode)}${error})`;
}

function outcome(err: unknown): string {
  const status = (err as { status?: unknown } | null)?.status;
  const code = (err as { code?: unknown } | null)?.code;
  const name = typeof code === "string" ? code : err instanceof Error ? err.name : "error";
  return `${typeof status === "number" ? `HTTP ${status} ` : ""}${name}: ${errorMessage(err, MAX_FAILURE_TEXT)}`;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === "object" && v !== null && Symbol.asyncIterator in v;
}
