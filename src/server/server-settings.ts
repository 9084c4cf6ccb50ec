// The `server:` settings: the listener's address, its web configuration file and the deprecated
// listener settings that file replaces.
import { isIP } from "node:net";
import { z } from "zod";
import { bool, text } from "../config/fields.js";
import type { SectionOf } from "../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";
import { BCRYPT_HASH } from "../util/bcrypt-hash.js";

const X = ENV_PREFIX;

/** host:port, [v6]:port or :port (all interfaces); port 0 picks a free one. */
const listen = text.refine(
  (s) => {
    const m = /^(?:\[([0-9a-fA-F:.]+(?:%[\w.-]+)?)\]|([\w.-]*)):(\d{1,5})$/.exec(s);
    if (!m || Number(m[3]) > 65_535) return false;
    return m[1] === undefined || isIP(m[1].split("%")[0] as string) === 6;
  },
  { error: "host:port, [::1]:port or :port" },
);

const HTPASSWD = `htpasswd -nBC 10 "" | tr -d ':\\n'`;
const bcryptHash = text.refine((s) => BCRYPT_HASH.test(s), {
  error: (issue) =>
    typeof issue.input === "string" && /^[0-9a-fA-F]{64}$/.test(issue.input)
      ? `a bcrypt hash, not a SHA-256 (no longer accepted): make one with ${HTPASSWD}, or move the users to basic_auth_users in --web.config.file`
      : `a bcrypt hash (${HTPASSWD})`,
});

/** The listener settings --web.config.file replaces; kept for one release. */
export const DEPRECATED_LISTENER = [
  "bearerTokenFile",
  "basicAuthUsers",
  "tlsCertFile",
  "tlsKeyFile",
] as const;

export const serverSlice = defineSlice({
  key: "server",
  fields: {
    listen: listen.default("0.0.0.0:9464"),
    /** exporter-toolkit's web configuration file: TLS, mutual TLS, headers, bcrypt basic auth. */
    webConfigFile: text.min(1, { error: "a file path" }).optional(),
    /** Deprecated: no equivalent in --web.config.file. */
    bearerTokenFile: text.min(1, { error: "a file path" }).optional(),
    /** Deprecated (basic_auth_users in --web.config.file): user -> bcrypt hash of the password. */
    basicAuthUsers: z
      .record(text, bcryptHash, { error: "a mapping of user name to bcrypt hash of the password" })
      .optional(),
    /** Deprecated (tls_server_config.cert_file). */
    tlsCertFile: text.min(1, { error: "a file path" }).optional(),
    /** Deprecated (tls_server_config.key_file). */
    tlsKeyFile: text.min(1, { error: "a file path" }).optional(),
    /** Serve POST /-/reload, as Prometheus' --web.enable-lifecycle; SIGHUP reloads regardless. */
    enableLifecycle: bool.default(false),
  },
  check(s, ctx) {
    if (s.webConfigFile !== undefined)
      for (const key of DEPRECATED_LISTENER) {
        if (s[key] === undefined) continue;
        ctx.addIssue({
          code: "custom",
          path: [key],
          message:
            "not set together with server.webConfigFile (--web.config.file), which replaces it",
        });
      }
    if ((s.tlsCertFile === undefined) === (s.tlsKeyFile === undefined)) return;
    const missing = s.tlsCertFile === undefined ? "tlsCertFile" : "tlsKeyFile";
    const other = missing === "tlsCertFile" ? "tlsKeyFile" : "tlsCertFile";
    ctx.addIssue({
      code: "custom",
      path: [missing],
      message: `to be set together with server.${other}`,
    });
  },
  settings: [
    {
      path: "server.listen",
      env: `${X}LISTEN`,
      flag: "listen",
      kind: "string",
      help: "listen address host:port, [::1]:port or :port",
    },
    {
      path: "server.enableLifecycle",
      env: `${X}WEB_ENABLE_LIFECYCLE`,
      // Prometheus' spelling; the hyphenated one matches our other --web-* flags.
      flag: "web.enable-lifecycle",
      flagAliases: ["web-enable-lifecycle"],
      kind: "bool",
      help: "serve POST /-/reload (without it: 403; SIGHUP always reloads)",
      doc: "serve `POST /-/reload` (bare flag or =true/false); without it the endpoint answers 403, SIGHUP always reloads",
    },
    {
      path: "server.webConfigFile",
      env: `${X}WEB_CONFIG_FILE`,
      // exporter-toolkit's flag, as node_exporter and Prometheus spell it.
      flag: "web.config.file",
      flagAliases: ["web-config-file"],
      kind: "string",
      help: "exporter-toolkit web config file: TLS, mutual TLS, headers, bcrypt basic auth (re-read on reload)",
      doc: "Prometheus' exporter-toolkit web configuration file: TLS, mutual TLS, response headers, bcrypt basic auth; re-read on SIGHUP and `POST /-/reload` (see [Securing the listener](operations.md#securing-the-listener))",
    },
    {
      path: "server.bearerTokenFile",
      env: `${X}WEB_BEARER_TOKEN_FILE`,
      flag: "web-bearer-token-file",
      kind: "string",
      help: "DEPRECATED, removed in the next release: require this bearer token on the listener",
      doc: "**Deprecated**, removed in the next release: require this bearer token on the listener",
    },
    {
      path: "server.tlsCertFile",
      env: `${X}WEB_TLS_CERT_FILE`,
      flag: "web-tls-cert-file",
      kind: "string",
      help: "DEPRECATED (use cert_file in --web.config.file): serve HTTPS with this certificate",
      doc: "**Deprecated**, removed in the next release (use `cert_file` in `--web.config.file`): serve HTTPS with this certificate",
    },
    {
      path: "server.tlsKeyFile",
      env: `${X}WEB_TLS_KEY_FILE`,
      flag: "web-tls-key-file",
      kind: "string",
      help: "DEPRECATED (use key_file in --web.config.file): private key of the certificate",
      doc: "**Deprecated**, removed in the next release (use `key_file` in `--web.config.file`): private key of the certificate",
    },
  ],
});

declare module "../config/settings.js" {
  interface Settings {
    server: SectionOf<typeof serverSlice>;
  }
}
