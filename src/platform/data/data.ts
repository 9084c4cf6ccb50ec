// The data channel: in-sandbox agent calls through the data-plane proxy, never through an HTTP proxy.
import { performance } from "node:perf_hooks";
import { Agent, type Dispatcher, FormData, request } from "undici";
import { deadline, timerMs } from "../../util/duration.js";
import { ExporterError } from "../../util/errors.js";
import { Secrets } from "../../util/secrets.js";
import { PlatformBodyError, readCapped } from "../http-errors.js";
import type { ProcessEvent } from "../types.js";
import type { DataOptions, RunResult, SandboxRef, StartOptions, TimedEvent } from "./data-types.js";
import {
  type DataCall,
  dataConnector,
  filesPath,
  MAX_ERROR_BODY_BYTES,
  refusal,
  typedDataError,
} from "./data-wire.js";
import { basicUserHeader, envdUser } from "./envd-version.js";
import { decodeEnvelopeStream, encodeJsonEnvelope, parseEnvelopeJson } from "./envelope.js";
import { type PortAnswer, type PortRequest, sendPortRequest } from "./port-request.js";
import {
  buildStartRequest,
  OutputCollector,
  parseProcessEvent,
  type StartInput,
  wrapCommand,
} from "./process-event.js";

export { DataPlaneError } from "../http-errors.js";
export type {
  DataOptions,
  DataPlaneRouting,
  RunResult,
  SandboxRef,
  StartOptions,
  TimedEvent,
} from "./data-types.js";

const DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024;
/** With a deadline the agent kills the process itself; this leaves time for its answer to arrive. */
const DEADLINE_GRACE_MS = 1_000;
const START_PATH = "/process.Process/Start";
/** Headers E2B's client proxy routes on when the Host is the shared `sandbox.{domain}`. */
const SANDBOX_ID_HEADER = "e2b-sandbox-id";
const SANDBOX_PORT_HEADER = "e2b-sandbox-port";

/**
 * Client of the in-sandbox agent: process start, command run, file read and write. Every error it
 * throws is scrubbed of the access tokens it was given (and of the other secrets it shares).
 */
export class DataClient {
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly monotonic: () => number;
  private readonly secrets: Secrets;

  constructor(private readonly o: DataOptions) {
    this.monotonic = o.monotonic ?? (() => performance.now());
    this.secrets = o.secrets ?? new Secrets();
    this.ownsDispatcher = !o.dispatcher;
    // Never EnvHttpProxyAgent nor the global dispatcher: the data plane is reached directly even
    // when HTTP(S)_PROXY is set.
    this.dispatcher = o.dispatcher ?? new Agent({ connect: dataConnector(o) });
  }

  /**
   * Origin of a sandbox's agent: {scheme}://{agentPort}-{id}.{domain} (routing `headers`:
   * {scheme}://sandbox.{domain}), with the proxy port unless dialling a node.
   */
  origin(sb: SandboxRef, sandboxPort = this.o.agentPort): string {
    const port = this.o.proxyPortHttp && !this.o.proxyNodeIp ? `:${this.o.proxyPortHttp}` : "";
    const domain = sb.domain || this.o.sandboxDomain;
    const host =
      this.o.routing === "headers" ? `sandbox.${domain}` : `${sandboxPort}-${sb.id}.${domain}`;
    return `${this.o.proxyScheme}://${host}${port}`;
  }

  /**
   * A request to a service on one of the sandbox's ports (not its agent), routed as the agent
   * calls are; no agent token is sent, the traffic token only when given. Errors are scrubbed.
   */
  async requestPort(sb: SandboxRef, req: PortRequest): Promise<PortAnswer> {
    if (req.trafficToken) this.secrets.addTransient(req.trafficToken);
    const routingHeaders: Record<string, string> =
      this.o.routing === "headers"
        ? { [SANDBOX_ID_HEADER]: sb.id, [SANDBOX_PORT_HEADER]: String(req.port) }
        : {};
    try {
      return await sendPortRequest(
        this.dispatcher,
        { url: `${this.origin(sb, req.port)}${req.path}`, routingHeaders },
        req,
        { timeoutMs: this.o.timeoutMs, monotonic: this.monotonic },
      );
    } catch (err) {
      throw this.scrubbed(err);
    }
  }

  /** Starts a process and yields its events as they arrive; the stream must end with end-of-stream. */
  async *startProcess(
    sb: SandboxRef,
    input: StartInput,
    opts: StartOptions = {},
  ): AsyncGenerator<TimedEvent, void, undefined> {
    try {
      yield* this.stream(sb, input, opts);
    } catch (err) {
      throw this.scrubbed(err);
    }
  }

  /** Runs `command` through `/bin/bash -l -c` and collects its output. */
  async run(sb: SandboxRef, command: string, opts: StartOptions = {}): Promise<RunResult> {
    const out = new OutputCollector();
    let end: Extract<ProcessEvent, { type: "end" }> | undefined;
    for await (const { event } of this.startProcess(sb, wrapCommand(command), opts)) {
      out.add(event);
      if (event.type === "end") end = event;
    }
    if (!end)
      throw new ExporterError(
        "ERR_PROCESS_NO_END",
        `${START_PATH}: stream finished without an end event`,
      );
    const { stdout, stderr } = out.result();
    return {
      stdout,
      stderr,
      exitCode: end.exitCode,
      ...(end.status ? { status: end.status } : {}),
    };
  }

  /** GET /files?path=: the file's raw bytes. */
  async readFile(
    sb: SandboxRef,
    path: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<Buffer> {
    try {
      return await this.read(sb, path, opts.signal);
    } catch (err) {
      throw this.scrubbed(err);
    }
  }

  /**
   * POST /files?path= as multipart/form-data with the content in the part "file": what E2B's SDK
   * sends on every envd version (a raw body only from 0.5.7, and only when asked).
   */
  async writeFile(
    sb: SandboxRef,
    path: string,
    content: Buffer | string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<void> {
    try {
      await this.write(sb, path, content, opts.signal);
    } catch (err) {
      throw this.scrubbed(err);
    }
  }

  /** Closes the built-in Agent; an injected dispatcher belongs to the caller. */
  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /**
   * The one way out of the client for an error: every secret (the access tokens it was given
   * included) scrubbed from its message, stack, excerpt and cause, in place.
   */
  private scrubbed(err: unknown): unknown {
    return this.secrets.scrubError(err);
  }

  private async *stream(
    sb: SandboxRef,
    input: StartInput,
    opts: StartOptions,
  ): AsyncGenerator<TimedEvent, void, undefined> {
    const headers: Record<string, string> = {
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      ...this.sandboxHeaders(sb),
    };
    const user = envdUser(sb.envdVersion);
    if (user !== undefined) headers.authorization = basicUserHeader(user);
    if (opts.deadlineMs !== undefined)
      headers["connect-timeout-ms"] = String(Math.max(1, Math.ceil(opts.deadlineMs)));
    if (opts.acceptGzip) headers["connect-accept-encoding"] = "gzip";
    if (opts.keepaliveIntervalS !== undefined)
      headers["keepalive-ping-interval"] = String(opts.keepaliveIntervalS);
    const limitMs =
      opts.deadlineMs !== undefined ? opts.deadlineMs + DEADLINE_GRACE_MS : this.o.timeoutMs;
    const call = { endpoint: START_PATH, method: "POST", limitMs, signal: opts.signal };
    // Armed until the stream ends: the limit covers the whole body, not only the headers.
    const limit = deadline(limitMs, opts.signal);
    try {
      yield* this.events(sb, call, limit.signal, opts, {
        headers,
        body: encodeJsonEnvelope(buildStartRequest(input)),
      });
    } finally {
      limit.clear();
    }
  }

  private async *events(
    sb: SandboxRef,
    call: DataCall,
    signal: AbortSignal,
    opts: StartOptions,
    init: { headers: Record<string, string>; body: Buffer },
  ): AsyncGenerator<TimedEvent, void, undefined> {
    const res = await this.request(sb, START_PATH, call, init, signal);
    if (res.statusCode !== 200) throw await refusal(call, res, this.secrets);
    const encoding = res.headers["connect-content-encoding"];
    if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip") {
      // Destroyed unread, undici's body emits an abort error: with no listener it would be uncaught.
      res.body.on("error", ignore).destroy();
      throw new PlatformBodyError(
        START_PATH,
        "POST",
        `unsupported Connect-Content-Encoding ${String(encoding)}`,
      );
    }
    const monotonic = this.monotonic;
    const typed = (err: unknown): unknown => typedDataError(call, err);
    // Time stamps the first byte and types transport failures that happen mid-stream.
    const source = async function* (): AsyncGenerator<Uint8Array> {
      let first = true;
      try {
        for await (const chunk of res.body) {
          if (first) {
            first = false;
            opts.onFirstByte?.(monotonic());
          }
          yield chunk as Uint8Array;
        }
      } catch (err) {
        throw typed(err);
      }
    };
    try {
      for await (const frame of decodeEnvelopeStream(source())) {
        const event = parseProcessEvent(parseEnvelopeJson(frame), frame.offset);
        yield { event, at: monotonic(), offset: frame.offset };
      }
    } finally {
      res.body.destroy();
    }
  }

  private async read(sb: SandboxRef, path: string, signal?: AbortSignal): Promise<Buffer> {
    const call = { endpoint: "/files", method: "GET", limitMs: this.o.timeoutMs, signal };
    const limit = deadline(call.limitMs, signal);
    const sent = this.monotonic();
    try {
      const init = { headers: this.sandboxHeaders(sb) };
      const res = await this.request(sb, filesPath(sb, path), call, init, limit.signal);
      const headersMs = this.monotonic() - sent;
      if (res.statusCode < 200 || res.statusCode >= 300)
        throw await refusal(call, res, this.secrets);
      try {
        return await readCapped(res.body, this.o.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES);
      } catch (err) {
        throw typedDataError(call, err, headersMs);
      }
    } finally {
      limit.clear();
    }
  }

  private async write(
    sb: SandboxRef,
    path: string,
    content: Buffer | string,
    signal?: AbortSignal,
  ): Promise<void> {
    const form = new FormData();
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    // The SDK names the part after the path it writes; envd takes the path from the query.
    form.append("file", new Blob([bytes]), path);
    const call = { endpoint: "/files", method: "POST", limitMs: this.o.timeoutMs, signal };
    const limit = deadline(call.limitMs, signal);
    try {
      const init = { headers: this.sandboxHeaders(sb), body: form };
      const res = await this.request(sb, filesPath(sb, path), call, init, limit.signal);
      if (res.statusCode < 200 || res.statusCode >= 300)
        throw await refusal(call, res, this.secrets);
      try {
        await readCapped(res.body, MAX_ERROR_BODY_BYTES);
      } catch (err) {
        throw typedDataError(call, err);
      }
    } finally {
      limit.clear();
    }
  }

  /**
   * The headers every call to a sandbox's agent carries: its routing headers (routing `headers`)
   * and its agent token, which joins the secrets scrubbed from errors.
   */
  private sandboxHeaders(sb: SandboxRef): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.o.routing === "headers") {
      out[SANDBOX_ID_HEADER] = sb.id;
      out[SANDBOX_PORT_HEADER] = String(this.o.agentPort);
    }
    if (sb.accessToken) {
      this.secrets.addTransient(sb.accessToken);
      out["x-access-token"] = sb.accessToken;
    }
    return out;
  }

  private async request(
    sb: SandboxRef,
    path: string,
    call: DataCall,
    init: { headers: Record<string, string>; body?: Buffer | FormData },
    /** The call's deadline (chained to the caller's signal), armed until its body is read. */
    signal: AbortSignal,
  ): Promise<Dispatcher.ResponseData> {
    const limitMs = timerMs(call.limitMs);
    try {
      return await request(`${this.origin(sb)}${path}`, {
        method: call.method as Dispatcher.HttpMethod,
        headers: init.headers,
        body: init.body,
        dispatcher: this.dispatcher,
        signal,
        headersTimeout: limitMs,
        bodyTimeout: limitMs,
      });
    } catch (err) {
      throw typedDataError(call, err);
    }
  }
}

function ignore(): void {}
