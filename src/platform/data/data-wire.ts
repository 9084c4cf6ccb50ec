// The wire under the data channel: its connector (dialling a node when asked), and the typing of
// a refused answer or a transport failure into the errors every caller knows.
import { buildConnector, type Dispatcher } from "undici";
import { ExporterError } from "../../util/errors.js";
import type { Secrets } from "../../util/secrets.js";
import {
  BodyTooLargeError,
  connectErrorCode,
  DataPlaneError,
  excerpt,
  isTimeout,
  PlatformBodyError,
  PlatformNetworkError,
  PlatformTimeoutError,
  readCapped,
} from "../http-errors.js";
import type { DataOptions, SandboxRef } from "./data-types.js";
import { envdUser } from "./envd-version.js";

/** An error body is only read this far; the excerpt is shorter still. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** One data-plane call: what its errors name, its limit, and the caller's signal. */
export interface DataCall {
  endpoint: string;
  method: string;
  limitMs: number;
  signal: AbortSignal | undefined;
}

/** undici connector: with proxyNodeIp, dial the node while Host and TLS SNI keep the sandbox name. */
export function dataConnector(o: DataOptions): buildConnector.connector {
  const connect = buildConnector({ ...(o.connect ?? {}) });
  const nodeIp = o.proxyNodeIp;
  if (!nodeIp) return connect;
  const port = String(o.proxyPortHttp || (o.proxyScheme === "https" ? 443 : 80));
  return (opts, cb) =>
    connect({ ...opts, hostname: nodeIp, port, servername: opts.servername || opts.hostname }, cb);
}

/** A non-success answer as DataPlaneError with a short, secret-free excerpt. */
export async function refusal(
  call: DataCall,
  res: Dispatcher.ResponseData,
  secrets: Secrets,
): Promise<Error> {
  let text = "";
  try {
    text = (await readCapped(res.body, MAX_ERROR_BODY_BYTES)).toString("utf8");
  } catch {
    // The status alone is the answer; a body we cannot read adds nothing.
  }
  const code = connectErrorCode(text);
  return new DataPlaneError(
    call.endpoint,
    call.method,
    res.statusCode,
    excerpt(text, secrets),
    code,
  );
}

/**
 * A transport failure as a typed error; the caller's own abort and our typed errors pass through.
 * `headersMs`: the answer's headers came this long after sending (a timeout is the body's then).
 */
export function typedDataError(call: DataCall, err: unknown, headersMs?: number): unknown {
  if (err instanceof ExporterError || call.signal?.aborted) return err;
  if (isTimeout(err))
    return new PlatformTimeoutError(call.endpoint, call.method, call.limitMs, headersMs);
  if (err instanceof BodyTooLargeError)
    return new PlatformBodyError(call.endpoint, call.method, err.message);
  return new PlatformNetworkError(call.endpoint, call.method, err);
}

/** `/files?path=`, with `username` where the sandbox's envd needs a user named (below 0.4.0). */
export function filesPath(sb: SandboxRef, path: string): string {
  const user = envdUser(sb.envdVersion);
  const named = user === undefined ? "" : `&username=${encodeURIComponent(user)}`;
  return `/files?path=${encodeURIComponent(path)}${named}`;
}
