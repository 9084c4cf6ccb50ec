// Every secret the configuration keeps in a file, read by one function, at start and at each
// reload: the admin token, the listener's bearer token, the policy webhook's header value and E2B's
// webhook signing secret. (The API key file becomes platform.apiKey while the configuration loads:
// it takes part in the sources' precedence.) Each value is trimmed and checked by readSecretFile.
import { readFileSync } from "node:fs";
import { readSecretFile } from "./secret-file.js";
import type { Config } from "./settings.js";

/** The secrets read from files; a setting left unset is absent. */
export interface SecretValues {
  /** platform.adminTokenFile: E2B's X-Admin-Token for /nodes. */
  adminToken?: string;
  /** server.bearerTokenFile (deprecated listener setting). */
  bearerToken?: string;
  /** policy.webhook.headerValueFile. */
  policyWebhookHeader?: string;
  /** webhooks.e2bSecretFile: "" when the file is empty (every delivery is then refused). */
  e2bWebhookSecret?: string;
}

/** A secret kept in a file. */
export type SecretName = keyof SecretValues;

/** Every secret a configuration may keep in a file, in the order they are read. */
export const SECRET_NAMES: readonly SecretName[] = [
  "adminToken",
  "bearerToken",
  "policyWebhookHeader",
  "e2bWebhookSecret",
];

/**
 * Reads the secret files `config` names, of `names` (default all); a bad one throws a ConfigError
 * naming its setting.
 */
export function readSecretFiles(
  config: Config,
  names: readonly SecretName[] = SECRET_NAMES,
  read: (path: string) => string = (path) => readFileSync(path, "utf8"),
): SecretValues {
  const out: SecretValues = {};
  const want = new Set(names);
  const admin = want.has("adminToken") ? config.platform.adminTokenFile : undefined;
  if (admin) {
    const v = readSecretFile(read, admin, "platform.adminTokenFile");
    if (v) out.adminToken = v;
  }
  // The deprecated listener settings are ignored when a web config file secures the listener.
  const bearer =
    config.server.webConfigFile === undefined ? config.server.bearerTokenFile : undefined;
  if (bearer) out.bearerToken = readSecretFile(read, bearer, "server.bearerTokenFile");
  const header =
    want.has("policyWebhookHeader") && config.policy.enabled
      ? config.policy.webhook?.headerValueFile
      : undefined;
  if (header)
    out.policyWebhookHeader = readSecretFile(read, header, "policy.webhook.headerValueFile");
  const e2b = want.has("e2bWebhookSecret") ? config.webhooks.e2bSecretFile : undefined;
  if (e2b !== undefined)
    out.e2bWebhookSecret = e2b ? readSecretFile(read, e2b, "webhooks.e2bSecretFile") : "";
  return out;
}

/** Every value of `values`, for the scrubber. */
export function secretList(values: SecretValues): string[] {
  return Object.values(values).filter((v): v is string => typeof v === "string" && v !== "");
}

/**
 * The API keys of platform.teams, by team id, from each entry's apiKeyFile (several teams); a team
 * without one is read with the admin token. A bad file throws a ConfigError naming its entry.
 */
export function readTeamKeys(
  config: Config,
  read: (path: string) => string = (path) => readFileSync(path, "utf8"),
): Map<string, string> {
  const out = new Map<string, string>();
  config.platform.teams.forEach((team, i) => {
    if (team.apiKeyFile)
      out.set(team.id, readSecretFile(read, team.apiKeyFile, `platform.teams[${i}].apiKeyFile`));
  });
  return out;
}
