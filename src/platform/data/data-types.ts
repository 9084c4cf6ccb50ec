// What the data channel is configured with and what it hands back: its options, a sandbox as the
// data plane addresses it, and the records of a process run.
import type { buildConnector, Dispatcher } from "undici";
import type { Secrets } from "../../util/secrets.js";
import type { ProcessEvent } from "../types.js";

/**
 * How a data-plane call names its sandbox: `host` by the Host `{agentPort}-{id}.{domain}` (needs
 * wildcard DNS), `headers` by E2b-Sandbox-Id/-Port to `sandbox.{domain}`, as E2B's SDK does.
 */
export type DataPlaneRouting = "host" | "headers";

/** Settings of the data channel. */
export interface DataOptions {
  sandboxDomain: string;
  proxyScheme: "http" | "https";
  /** When non-empty, every connection dials this address (Host and SNI still name the sandbox). */
  proxyNodeIp: string;
  /** Port of the data-plane proxy; 0 = the scheme's default port. */
  proxyPortHttp: number;
  /** Port of the in-sandbox agent (E2B envd), part of its host name or of its routing header. */
  agentPort: number;
  /** Default `host`. */
  routing?: DataPlaneRouting;
  timeoutMs: number;
  /** Monotonic milliseconds for stream timings; default performance.now. */
  monotonic?: () => number;
  /** Extra socket/TLS options of undici's connector, e.g. `{ ca }` in tests. */
  connect?: buildConnector.BuildOptions;
  /** Replaces the built-in Agent (tests only); the caller keeps ownership. */
  dispatcher?: Dispatcher;
  /** Bound on a file read; default 64 MiB. */
  maxFileBytes?: number;
  /**
   * Secrets scrubbed from every error (share the control channel's); each access token the client
   * is given joins it. Default: a Secrets of its own.
   */
  secrets?: Secrets;
}

/** A sandbox as the data plane addresses it. */
export interface SandboxRef {
  id: string;
  domain?: string;
  accessToken?: string;
  /**
   * Version of its agent (E2B `envdVersion`): it decides what a request must carry (a user named
   * below 0.4.0). Unknown: taken as current.
   */
  envdVersion?: string;
}

/** A stream event, when it arrived, and the stream byte offset of its frame. */
export interface TimedEvent {
  event: ProcessEvent;
  at: number;
  offset: number;
}

/** Per-call options of process.Process/Start. */
export interface StartOptions {
  signal?: AbortSignal;
  /** Sent as Connect-Timeout-Ms (the agent kills the process when it expires) only when given. */
  deadlineMs?: number;
  /** Sent as Keepalive-Ping-Interval (seconds). */
  keepaliveIntervalS?: number;
  /** Sends Connect-Accept-Encoding: gzip, letting the agent compress frames. */
  acceptGzip?: boolean;
  /** Called with the monotonic time of the first response body byte. */
  onFirstByte?: (at: number) => void;
}

/** What a command run produced. */
export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  status?: string;
}
