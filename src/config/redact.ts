// Secrets in configuration: which settings hold one, and a copy of the config safe to print or log.
import type { Config } from "./schema.js";

const MASK = "***";
/** Key names that hold a secret value (not a path to one: `apiKeyFile` is fine to show). */
const SECRET_KEY = /(?:apikey|password|passwd|secret|token|credentials?)$/i;
/** Maps whose every value is secret-derived (user -> password hash). */
const SECRET_MAPS = ["server.basicAuthUsers"];
/** Maps of platform field names: `accessToken: envdAccessToken` names a field, it is no secret. */
const NAME_MAPS = ["fieldMap"];

/** True when the value at this dotted path must never be shown. */
export function isSecretPath(path: string): boolean {
  if (SECRET_MAPS.some((m) => path.startsWith(`${m}.`))) return true;
  if (NAME_MAPS.some((m) => path.startsWith(`${m}.`))) return false;
  return path.split(".").some((key) => SECRET_KEY.test(key));
}

/** A deep copy safe to print: every secret string shown as "***" (an empty one stays empty). */
export function redactConfig(config: Config): Config {
  return mask(config, "") as Config;
}

function mask(value: unknown, path: string): unknown {
  if (typeof value === "string") return value !== "" && isSecretPath(path) ? MASK : value;
  if (Array.isArray(value)) return value.map((v, i) => mask(v, `${path}.${i}`));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = mask(v, path ? `${path}.${k}` : k);
    return out;
  }
  return value;
}
