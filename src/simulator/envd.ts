// What a sandbox's agent (envd) enforces, by version: read from e2b-dev/infra packages/envd.
import { posix } from "node:path";

/** envd of templates built now (infra packages/envd/pkg/version.go): what sandboxes get by default. */
export const CURRENT_ENVD_VERSION = "0.6.13";

/**
 * Versions on both sides of each boundary the agent and E2B's SDK switch on: below 0.4.0 (a user
 * is required), 0.4.0 to 0.5.6 (default user, multipart uploads only), 0.5.7 and later (raw
 * uploads), and 0.6.x. Generated templates take them in turn when a simulator asks for the mix.
 */
export const ENVD_VERSION_MIX: readonly string[] = [
  "0.2.4",
  "0.3.7",
  "0.4.0",
  "0.5.6",
  "0.5.7",
  CURRENT_ENVD_VERSION,
];

/** Users the fake sandbox image has, and their homes. */
const HOMES: Readonly<Record<string, string>> = { user: "/home/user", root: "/root" };
/** envd's default user from 0.4.0 on, as templates built by E2B's SDK set it through /init. */
export const DEFAULT_USER = "user";

/** What one envd version accepts. */
export interface EnvdRules {
  readonly version: string;
  /**
   * Below 0.4.0 every request names its user: `/files` without `username` is a 400 (the
   * generated router's required parameter), process.Process/Start without
   * `Authorization: Basic base64(user:)` ends with `unauthenticated: no user specified`.
   */
  readonly userRequired: boolean;
  /** From 0.5.7, POST /files also takes a raw `application/octet-stream` body (infra #2067). */
  readonly rawUpload: boolean;
}

/** Compares dotted numeric versions (`0.5.7` < `0.5.10`); a missing part counts as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  const pb = b.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** The rules of envd `version`. */
export function envdRules(version: string): EnvdRules {
  return {
    version,
    userRequired: compareVersions(version, "0.4.0") < 0,
    rawUpload: compareVersions(version, "0.5.7") >= 0,
  };
}

/** A user's home directory, or undefined for a user the image does not have. */
export function homeOf(user: string): string | undefined {
  return Object.hasOwn(HOMES, user) ? HOMES[user] : undefined;
}

/** Resolves a path as envd does: relative paths against the user's home. */
export function resolveFor(user: string, path: string): string {
  return posix.resolve(homeOf(user) ?? (HOMES[DEFAULT_USER] as string), path);
}

/** The user named by `Authorization: Basic base64(user:)`, or undefined when there is none. */
export function basicAuthUser(header: string | undefined): string | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header ?? "");
  if (!m) return undefined;
  const decoded = Buffer.from(m[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  const user = colon < 0 ? decoded : decoded.slice(0, colon);
  return user === "" ? undefined : user;
}
