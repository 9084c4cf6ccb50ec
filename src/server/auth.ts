// Optional listener authentication in the manner of Prometheus' exporter-toolkit web config.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Accepted credentials; both may be set, either one passes. */
export interface ServerAuth {
  bearerToken?: string;
  /** user -> hex SHA-256 of the password. */
  basicUsers?: Record<string, string>;
}

/** Paths that stay open so orchestrators can probe liveness without credentials. */
const OPEN_PATHS = new Set(["/healthz", "/readyz"]);

function sameSecret(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/**
 * True when the listener asks for credentials. A configured but empty token (an empty token file)
 * counts: it closes the listener rather than silently opening it.
 */
export function requiresCredentials(auth: ServerAuth | undefined): boolean {
  return auth?.bearerToken !== undefined || auth?.basicUsers !== undefined;
}

/** True when the request may proceed. */
export function authorize(
  auth: ServerAuth | undefined,
  req: IncomingMessage,
  path: string,
): boolean {
  if (!auth || !requiresCredentials(auth) || OPEN_PATHS.has(path)) return true;
  const header = req.headers.authorization ?? "";
  const space = header.indexOf(" ");
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (scheme === "bearer" && auth.bearerToken) return sameSecret(value, auth.bearerToken);
  if (scheme === "basic" && auth.basicUsers) {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) return false;
    const hash = auth.basicUsers[decoded.slice(0, colon)];
    if (hash === undefined) return false;
    const given = createHash("sha256")
      .update(decoded.slice(colon + 1))
      .digest("hex");
    return sameSecret(given, hash.toLowerCase());
  }
  return false;
}
