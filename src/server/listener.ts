// How the listener is secured: the --web.config.file (exporter-toolkit's format) read at start and
// again at each reload, or the deprecated listener settings (read at start only).
import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import { ConfigError } from "../config/errors.js";
import { readSecretFiles } from "../config/secret-files.js";
import type { Config } from "../config/settings.js";
import type { ServerDeps } from "./server.js";
import { DEPRECATED_LISTENER } from "./server-settings.js";
import { loadWebConfig, type WebConfig, WebConfigError } from "./web-config.js";

/** How the listener is secured at start; what a reload may change of it. */
export type ListenerSecurity = Pick<ServerDeps, "auth" | "tls" | "webConfig">;

/** Whether the listener asks every request for credentials (basic auth or a bearer token). */
export function asksForCredentials(security: ListenerSecurity): boolean {
  return security.auth !== undefined || Object.keys(security.webConfig?.users ?? {}).length > 0;
}

/** The listener's security at start; a bad web config file stops the start like a bad setting. */
export function listenerSecurity(config: Config, log: Logger): ListenerSecurity {
  const s = config.server;
  if (s.webConfigFile !== undefined) return { webConfig: startWebConfig(s.webConfigFile) };
  const deprecated = DEPRECATED_LISTENER.filter((key) => s[key] !== undefined);
  if (deprecated.length > 0)
    log.warn(
      { settings: deprecated.map((key) => `server.${key}`) },
      "deprecated listener settings, removed in the next release: use --web.config.file (exporter-toolkit's format, bcrypt basic_auth_users)",
    );
  const out: ListenerSecurity = {};
  if (s.bearerTokenFile || s.basicAuthUsers) {
    out.auth = {
      ...(s.bearerTokenFile
        ? { bearerToken: readSecretFiles(config, ["bearerToken"]).bearerToken ?? "" }
        : {}),
      ...(s.basicAuthUsers ? { basicUsers: s.basicAuthUsers } : {}),
    };
  }
  if (s.tlsCertFile && s.tlsKeyFile)
    out.tls = { cert: readFileSync(s.tlsCertFile), key: readFileSync(s.tlsKeyFile) };
  return out;
}

function startWebConfig(file: string): WebConfig {
  try {
    return loadWebConfig(file, (path) => readFileSync(path));
  } catch (err) {
    if (!(err instanceof WebConfigError)) throw err;
    throw new ConfigError([
      {
        path: "server.webConfigFile",
        source: "file",
        origin: file,
        expected: "a valid exporter-toolkit web config file",
        received: err.message,
      },
    ]);
  }
}

/**
 * The web config file again, for a reload; undefined when the listener uses the deprecated
 * settings (read at start only). Throws when the change takes a restart.
 */
export function reloadedWebConfig(next: Config, started: ListenerSecurity): WebConfig | undefined {
  const file = next.server.webConfigFile;
  if (file === undefined) {
    if (!started.webConfig) return undefined;
    throw new WebConfigError(
      started.webConfig.file,
      "",
      "server.webConfigFile was unset: securing the listener another way takes a restart",
    );
  }
  const web = loadWebConfig(file, (path) => readFileSync(path));
  const tlsNow = started.webConfig?.tls !== undefined || started.tls !== undefined;
  if ((web.tls !== undefined) !== tlsNow)
    throw new WebConfigError(
      web.file,
      "tls_server_config",
      `turning TLS ${tlsNow ? "off" : "on"} takes a restart`,
    );
  return web;
}
