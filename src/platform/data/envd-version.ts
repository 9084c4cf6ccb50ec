// What the in-sandbox agent (E2B envd) needs from a client, by its version, as E2B's SDK decides it.

/** Oldest envd with a default user: below it every request names one (SDK `authenticationHeader`). */
const DEFAULT_USER_SINCE = "0.4.0";
/** The user E2B's SDK names when envd has no default (its `defaultUsername`). */
export const ENVD_DEFAULT_USER = "user";

/**
 * Compares dotted numeric versions (`0.5.7` < `0.5.10`); a missing or non-numeric part counts as
 * 0, and a pre-release suffix (`0.4.0-rc1`) is ignored.
 */
export function compareEnvdVersions(a: string, b: string): number {
  const parts = (v: string) =>
    (v.split("-")[0] ?? "").split(".").map((p) => Number.parseInt(p, 10) || 0);
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/**
 * The user to name on every agent call of a sandbox on envd `version`: below 0.4.0 envd refuses a
 * request without one (`/files` 400, process start `unauthenticated`), so the SDK's default user;
 * from 0.4.0 on none, as the SDK sends none. An unknown version is taken as current.
 */
export function envdUser(version: string | undefined): string | undefined {
  if (version === undefined || !/^\d/.test(version)) return undefined;
  return compareEnvdVersions(version, DEFAULT_USER_SINCE) < 0 ? ENVD_DEFAULT_USER : undefined;
}

/** `Authorization: Basic base64(user:)`, as envd authenticates a user on its Connect RPCs. */
export function basicUserHeader(user: string): string {
  return `Basic ${Buffer.from(`${user}:`, "utf8").toString("base64")}`;
}
