// Typed errors of both platform channels; messages carry endpoint and status, never a secret.
import { formatDuration } from "../util/duration.js";
import { ExporterError } from "../util/errors.js";
import type { Secrets } from "../util/secrets.js";

const EXCERPT_MAX = 200;

/** A short, secret-free excerpt of a response body (secrets are scrubbed before it is cut). */
export function excerpt(body: string, secrets: Secrets): string {
  // Scrubbing first: cutting first could leave the head of a secret that straddles the cut.
  const text = secrets.scrub(body).replace(/\s+/g, " ").trim();
  return text.length > EXCERPT_MAX ? `${text.slice(0, EXCERPT_MAX)}...` : text;
}

/** The platform answered with a status we do not accept. */
export class PlatformHttpError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    readonly status: number,
    readonly bodyExcerpt: string,
    /** Retry-After of the response in ms, when it carried one. */
    readonly retryAfterMs?: number,
  ) {
    super(
      "ERR_PLATFORM_HTTP",
      `${method} ${endpoint}: HTTP ${status}${bodyExcerpt ? `: ${bodyExcerpt}` : ""}`,
    );
  }
}

/** The resource does not exist (404): gone, not failed. */
export class PlatformNotFoundError extends ExporterError {
  readonly status = 404;
  constructor(
    readonly endpoint: string,
    readonly method: string,
  ) {
    super("ERR_PLATFORM_NOT_FOUND", `${method} ${endpoint}: not found`);
  }
}

/** The connection failed before a response arrived. */
export class PlatformNetworkError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    cause: unknown,
  ) {
    // Only the error code (ECONNREFUSED, UND_ERR_SOCKET, ...): library messages may quote URLs.
    const c = cause as { code?: unknown; name?: unknown } | undefined;
    const detail = typeof c?.code === "string" ? c.code : String(c?.name ?? "unknown");
    super("ERR_PLATFORM_NETWORK", `${method} ${endpoint}: network error (${detail})`, { cause });
  }
}

/** No response within the configured timeout; `headersMs`: the headers came, the body did not. */
export class PlatformTimeoutError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    readonly timeoutMs: number,
    readonly headersMs?: number,
  ) {
    const within = formatDuration(timeoutMs);
    super(
      "ERR_PLATFORM_TIMEOUT",
      headersMs === undefined
        ? `${method} ${endpoint}: no response within ${within}`
        : `${method} ${endpoint}: body not complete within ${within}; headers arrived after ${formatDuration(headersMs)}`,
    );
  }
}

/**
 * Not sent: the endpoint (or, with several endpoints held, the whole key) is held by a
 * Retry-After for longer than this caller waits.
 */
export class PlatformHeldError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    readonly remainingMs: number,
  ) {
    super(
      "ERR_PLATFORM_HELD",
      `${method} ${endpoint}: not sent, the platform asked to wait ${Math.ceil(remainingMs / 1000)} s more (Retry-After)`,
    );
  }
}

/** The body was not what the endpoint promises (not JSON, too large, wrong shape). */
export class PlatformBodyError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    detail: string,
  ) {
    super("ERR_PLATFORM_BAD_BODY", `${method} ${endpoint}: ${detail}`);
  }
}

/** The in-sandbox agent (or the data-plane proxy) refused a call with an HTTP status. */
export class DataPlaneError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    readonly status: number,
    readonly bodyExcerpt: string,
    /** `code` of a Connect unary-style error body `{code, message}`, when there is one. */
    readonly connectCode?: string,
  ) {
    super(
      "ERR_DATA_PLANE_HTTP",
      `${method} ${endpoint}: HTTP ${status}${connectCode ? ` (${connectCode})` : ""}${bodyExcerpt ? `: ${bodyExcerpt}` : ""}`,
    );
  }
}

/** The `code` of a Connect-style JSON error body, as text; undefined when the body is not one. */
export function connectErrorCode(body: string): string | undefined {
  try {
    const json: unknown = JSON.parse(body);
    const code = (json as { code?: unknown } | null)?.code;
    return typeof code === "string" || typeof code === "number" ? String(code) : undefined;
  } catch {
    return undefined;
  }
}

/** True when `err` is a timeout of undici or of an AbortSignal.timeout(). */
export function isTimeout(err: unknown): boolean {
  const e = err as { name?: string; code?: string } | undefined;
  return (
    e?.name === "TimeoutError" ||
    e?.code === "UND_ERR_HEADERS_TIMEOUT" ||
    e?.code === "UND_ERR_BODY_TIMEOUT" ||
    e?.code === "UND_ERR_CONNECT_TIMEOUT"
  );
}

/** Reads a whole body, failing past `max` bytes instead of buffering without bound. */
export async function readCapped(
  body: AsyncIterable<Uint8Array> & { destroy(): unknown },
  max: number,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > max) {
      body.destroy();
      throw new BodyTooLargeError(max, size);
    }
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, size);
}

/** Raised by readCapped; callers turn it into their channel's typed error. */
export class BodyTooLargeError extends Error {
  constructor(
    readonly max: number,
    readonly seen: number,
  ) {
    super(`response body larger than ${max} bytes (read ${seen} before stopping)`);
  }
}

/** The metrics reason label of an error. */
export function errorReason(err: unknown): string {
  if (err instanceof PlatformHttpError) {
    // The platform asked us to slow down: not a fault of the request, counted apart.
    if (err.status === 429 || (err.status === 503 && err.retryAfterMs !== undefined))
      return "rate_limited";
    return err.status >= 500 ? "http_5xx" : "http_4xx";
  }
  if (err instanceof PlatformNotFoundError) return "not_found";
  if (err instanceof PlatformTimeoutError) return "timeout";
  if (err instanceof PlatformNetworkError) return "network";
  if (err instanceof PlatformBodyError) return "bad_body";
  if (err instanceof PlatformHeldError) return "held";
  if (err instanceof DataPlaneError) return err.status >= 500 ? "http_5xx" : "http_4xx";
  const code = (err as { code?: unknown })?.code;
  return code === "ERR_NORMALIZE" ? "bad_body" : "other";
}
