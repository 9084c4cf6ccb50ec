// Typed errors of both platform channels; messages carry endpoint and status, never a secret.
import { ExporterError } from "../util/errors.js";

const EXCERPT_MAX = 200;

/** A short, secret-free excerpt of a response body. */
export function excerpt(body: string, secrets: readonly string[]): string {
  let text = body.length > EXCERPT_MAX ? `${body.slice(0, EXCERPT_MAX)}...` : body;
  for (const s of secrets) if (s) text = text.split(s).join("***");
  return text.replace(/\s+/g, " ").trim();
}

/** The platform answered with a status we do not accept. */
export class PlatformHttpError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    readonly status: number,
    readonly bodyExcerpt: string,
  ) {
    super(
      "ERR_PLATFORM_HTTP",
      `${method} ${endpoint}: HTTP ${status}${bodyExcerpt ? `: ${bodyExcerpt}` : ""}`,
    );
  }
}

/** The resource does not exist (404): gone, not failed. */
export class PlatformNotFoundError extends ExporterError {
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
    const detail = (cause as { code?: string })?.code ?? (cause as Error)?.message ?? String(cause);
    super("ERR_PLATFORM_NETWORK", `${method} ${endpoint}: network error (${detail})`, { cause });
  }
}

/** No response within the configured timeout. */
export class PlatformTimeoutError extends ExporterError {
  constructor(
    readonly endpoint: string,
    readonly method: string,
    readonly timeoutMs: number,
  ) {
    super("ERR_PLATFORM_TIMEOUT", `${method} ${endpoint}: no response within ${timeoutMs} ms`);
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

/** The metrics reason label of an error. */
export function errorReason(err: unknown): string {
  if (err instanceof PlatformHttpError) return err.status >= 500 ? "http_5xx" : "http_4xx";
  if (err instanceof PlatformNotFoundError) return "not_found";
  if (err instanceof PlatformTimeoutError) return "timeout";
  if (err instanceof PlatformNetworkError) return "network";
  if (err instanceof PlatformBodyError) return "bad_body";
  const code = (err as { code?: unknown })?.code;
  return code === "ERR_NORMALIZE" ? "bad_body" : "other";
}
