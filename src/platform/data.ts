// The data channel: in-sandbox agent calls through the data-plane proxy, never through an HTTP proxy.
import { performance } from "node:perf_hooks";
import { Agent, buildConnector, type Dispatcher, FormData, request } from "undici";
import { ExporterError } from "../util/errors.js";
import { encodeJsonEnvelope } from "./envelope.js";
import { excerpt } from "./http-errors.js";
import {
  buildStartRequest,
  decodeProcessEvents,
  OutputCollector,
  type StartInput,
  wrapCommand,
} from "./process-event.js";
import type { ProcessEvent } from "./types.js";

const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** Settings of the data channel. */
export interface DataOptions {
  sandboxDomain: string;
  proxyScheme: "http" | "https";
  proxyNodeIp: string;
  /** 0 = the scheme's default port. */
  proxyPortHttp: number;
  agentPort: number;
  timeoutMs: number;
  /** Monotonic milliseconds for stream timings. */
  monotonic?: () => number;
  /** Extra TLS options (e.g. a test CA). */
  tls?: buildConnector.BuildOptions;
}

/** A sandbox as the data plane addresses it. */
export interface SandboxRef {
  id: string;
  domain?: string;
  accessToken?: string;
}

/** A stream event and when it arrived. */
export interface TimedEvent {
  event: ProcessEvent;
  at: number;
}

/** The agent answered with an error status. */
export class DataPlaneError extends ExporterError {
  constructor(
    readonly operation: string,
    readonly status: number,
    detail: string,
  ) {
    super("ERR_DATA_PLANE_HTTP", `${operation}: HTTP ${status}${detail ? `: ${detail}` : ""}`);
  }
}

/** Client of the in-sandbox agent: process start, command run, file read and write. */
export class DataClient {
  private readonly dispatcher: Dispatcher;
  private readonly monotonic: () => number;

  constructor(private readonly o: DataOptions) {
    this.monotonic = o.monotonic ?? (() => performance.now());
    // Never EnvHttpProxyAgent: the data plane is reached directly even when HTTP(S)_PROXY is set.
    if (o.proxyNodeIp) {
      const connector = buildConnector({ ...(o.tls ?? {}) });
      const port = o.proxyPortHttp || (o.proxyScheme === "https" ? 443 : 80);
      this.dispatcher = new Agent({
        connect: (opts, cb) =>
          connector(
            {
              ...opts,
              hostname: o.proxyNodeIp,
              port: String(port),
              servername: opts.servername ?? opts.hostname,
            },
            cb,
          ),
      });
    } else {
      this.dispatcher = new Agent(o.tls ? { connect: o.tls } : {});
    }
  }

  /** Origin of a sandbox's agent: {scheme}://{agentPort}-{id}.{domain}, with the proxy port unless dialling a node. */
  origin(sb: SandboxRef): string {
    const port = this.o.proxyPortHttp && !this.o.proxyNodeIp ? `:${this.o.proxyPortHttp}` : "";
    return `${this.o.proxyScheme}://${this.o.agentPort}-${sb.id}.${sb.domain ?? this.o.sandboxDomain}${port}`;
  }

  /** Starts a process and yields its events as they arrive. */
  async *startProcess(
    sb: SandboxRef,
    input: StartInput,
    opts: {
      signal?: AbortSignal;
      deadlineMs?: number;
      keepaliveIntervalS?: number;
      acceptGzip?: boolean;
      onFirstByte?: (at: number) => void;
    } = {},
  ): AsyncGenerator<TimedEvent, void, undefined> {
    const headers: Record<string, string> = {
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      ...this.authHeaders(sb),
    };
    if (opts.deadlineMs !== undefined)
      headers["connect-timeout-ms"] = String(Math.ceil(opts.deadlineMs));
    if (opts.acceptGzip) headers["connect-accept-encoding"] = "gzip";
    if (opts.keepaliveIntervalS !== undefined)
      headers["keepalive-ping-interval"] = String(opts.keepaliveIntervalS);
    const res = await request(`${this.origin(sb)}/process.Process/Start`, {
      method: "POST",
      headers,
      body: encodeJsonEnvelope(buildStartRequest(input)),
      dispatcher: this.dispatcher,
      signal: opts.signal ?? AbortSignal.timeout(opts.deadlineMs ?? this.o.timeoutMs),
      headersTimeout: opts.deadlineMs ?? this.o.timeoutMs,
      bodyTimeout: opts.deadlineMs ?? this.o.timeoutMs,
    });
    if (res.statusCode !== 200) {
      throw new DataPlaneError(
        "process.Process/Start",
        res.statusCode,
        excerpt(await res.body.text(), [sb.accessToken ?? ""]),
      );
    }
    const encoding = res.headers["connect-content-encoding"];
    if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip") {
      res.body.destroy();
      throw new DataPlaneError(
        "process.Process/Start",
        200,
        `unsupported Connect-Content-Encoding ${String(encoding)}`,
      );
    }
    const monotonic = this.monotonic;
    let first = true;
    const timed = async function* (): AsyncGenerator<Uint8Array> {
      for await (const chunk of res.body) {
        if (first) {
          first = false;
          opts.onFirstByte?.(monotonic());
        }
        yield chunk as Uint8Array;
      }
    };
    try {
      for await (const event of decodeProcessEvents(timed())) yield { event, at: monotonic() };
    } finally {
      res.body.destroy();
    }
  }

  /** Runs `command` through `/bin/bash -l -c` and collects its output. */
  async run(
    sb: SandboxRef,
    command: string,
    opts: { signal?: AbortSignal; deadlineMs?: number } = {},
  ): Promise<{ stdout: string; stderr: string; exitCode: number; status?: string }> {
    const out = new OutputCollector();
    let end: Extract<ProcessEvent, { type: "end" }> | undefined;
    for await (const { event } of this.startProcess(sb, wrapCommand(command), opts)) {
      out.add(event);
      if (event.type === "end") end = event;
    }
    if (!end)
      throw new ExporterError("ERR_PROCESS_NO_END", "process stream finished without an end event");
    const { stdout, stderr } = out.result();
    return {
      stdout,
      stderr,
      exitCode: end.exitCode,
      ...(end.status ? { status: end.status } : {}),
    };
  }

  /** Reads a file's raw bytes. */
  async readFile(
    sb: SandboxRef,
    path: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<Buffer> {
    const res = await request(`${this.origin(sb)}/files?path=${encodeURIComponent(path)}`, {
      method: "GET",
      headers: this.authHeaders(sb),
      dispatcher: this.dispatcher,
      signal: opts.signal ?? AbortSignal.timeout(this.o.timeoutMs),
    });
    if (res.statusCode !== 200)
      throw new DataPlaneError(
        "GET /files",
        res.statusCode,
        excerpt(await res.body.text(), [sb.accessToken ?? ""]),
      );
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).byteLength;
      if (size > MAX_FILE_BYTES) {
        res.body.destroy();
        throw new DataPlaneError("GET /files", 200, `file larger than ${MAX_FILE_BYTES} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  /** Writes a file as multipart/form-data (part "file"), the path in the query. */
  async writeFile(
    sb: SandboxRef,
    path: string,
    content: Buffer | string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const form = new FormData();
    form.append(
      "file",
      new Blob([typeof content === "string" ? Buffer.from(content) : content]),
      path.split("/").pop() || "file",
    );
    const res = await request(`${this.origin(sb)}/files?path=${encodeURIComponent(path)}`, {
      method: "POST",
      headers: this.authHeaders(sb),
      body: form,
      dispatcher: this.dispatcher,
      signal: opts.signal ?? AbortSignal.timeout(this.o.timeoutMs),
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300)
      throw new DataPlaneError(
        "POST /files",
        res.statusCode,
        excerpt(text, [sb.accessToken ?? ""]),
      );
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }

  private authHeaders(sb: SandboxRef): Record<string, string> {
    return sb.accessToken ? { "x-access-token": sb.accessToken } : {};
  }
}
