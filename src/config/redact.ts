// Secrets in configuration: which settings hold one, and a copy of the config safe to print or log.
import { isSecretKey } from "../util/secrets.js";
import type { Config } from "./settings.js";

const MASK = "***";
/** Maps of platform field names: `accessToken: envdAccessToken` names a field, it is no secret. */
const NAME_MAPS = ["fieldMap"];

/**
 * True when the value at this dotted path must never be shown: a key on the way is secret by the
 * secrets rule (`platform.apiKey`, all of `server.basicAuthUsers`; not `platform.apiKeyFile`).
 */
export function isSecretPath(path: string): boolean {
  if (NAME_MAPS.some((m) => path.startsWith(`${m}.`))) return false;
  return path.split(".").some(isSecretKey);
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
