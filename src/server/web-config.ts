// The listener's security from a Prometheus exporter-toolkit web configuration file
// (--web.config.file): TLS (mutual TLS too), response headers and bcrypt basic auth.
import type { X509Certificate } from "node:crypto";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { createSecureContext, type SecureVersion, type TLSSocket } from "node:tls";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { BCRYPT_HASH } from "../util/bcrypt-hash.js";
import { ExporterError, errorLine } from "../util/errors.js";

/** exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType names). */
export const CLIENT_AUTH_TYPES = [
  "NoClientCert",
  "RequestClientCert",
  "RequireAnyClientCert",
  "VerifyClientCertIfGiven",
  "RequireAndVerifyClientCert",
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

const TLS_VERSIONS: Record<string, SecureVersion> = {
  TLS10: "TLSv1",
  TLS11: "TLSv1.1",
  TLS12: "TLSv1.2",
  TLS13: "TLSv1.3",
};
const VERSION_ORDER: readonly SecureVersion[] = ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

/**
 * Go's tls.CipherSuites() (the ones exporter-toolkit accepts) -> OpenSSL's names. TLS 1.3 suites
 * are accepted and, as in Go, do not restrict TLS 1.3: Node's defaults stay.
 */
const CIPHER_SUITES: Record<string, string | null> = {
  TLS_AES_128_GCM_SHA256: null,
  TLS_AES_256_GCM_SHA384: null,
  TLS_CHACHA20_POLY1305_SHA256: null,
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
};

/** exporter-toolkit's curve names -> OpenSSL's. */
const CURVES: Record<string, string> = {
  CurveP256: "P-256",
  CurveP384: "P-384",
  CurveP521: "P-521",
  X25519: "X25519",
};

/** The response headers exporter-toolkit lets a file set, with their allowed values (any if empty). */
const HEADERS: Record<string, readonly string[]> = {
  "Strict-Transport-Security": [],
  "X-Content-Type-Options": ["nosniff"],
  "X-Frame-Options": ["deny", "sameorigin"],
  "X-XSS-Protection": [],
  "Content-Security-Policy": [],
};

/** The file's TLS part, its files read. */
export interface TlsSettings {
  cert: Buffer;
  key: Buffer;
  clientCa?: Buffer;
  clientAuth: ClientAuthType;
  clientAllowedSans?: readonly string[];
  minVersion: SecureVersion;
  maxVersion: SecureVersion;
  /** OpenSSL names of the TLS 1.2 suites allowed; absent: Node's defaults. */
  ciphers?: string;
  /** OpenSSL curve names in preference order; absent: Node's defaults. */
  ecdhCurve?: string;
  honorCipherOrder: boolean;
}

/** What a web configuration file asks of the listener. */
export interface WebConfig {
  /** Absolute path of the file. */
  file: string;
  tls?: TlsSettings;
  /** Headers added to every response. */
  headers: Readonly<Record<string, string>>;
  /** user -> bcrypt hash; empty: no basic auth. */
  users: Readonly<Record<string, string>>;
  /** Accepted for compatibility; the listener serves HTTP/1.1 either way. */
  http2: boolean;
}

/** The file is unreadable or invalid: names the file and the key, never a secret value. */
export class WebConfigError extends ExporterError {
  constructor(file: string, key: string, message: string) {
    super("ERR_WEB_CONFIG", `web config ${file}: ${key ? `${key}: ` : ""}${message}`);
  }
}

const str = z.string({ error: "a string" });
const strings = z.array(str, { error: "a list of strings" });

const TlsSchema = z.strictObject({
  cert: str.optional(),
  key: str.optional(),
  client_ca: str.optional(),
  cert_file: str.optional(),
  key_file: str.optional(),
  client_auth_type: z
    .enum([...CLIENT_AUTH_TYPES, "RequireClientCert"], {
      error: `one of ${CLIENT_AUTH_TYPES.join(", ")}`,
    })
    .optional(),
  client_ca_file: str.optional(),
  client_allowed_sans: strings.optional(),
  min_version: z
    .enum(Object.keys(TLS_VERSIONS), { error: "TLS10, TLS11, TLS12 or TLS13" })
    .optional(),
  max_version: z
    .enum(Object.keys(TLS_VERSIONS), { error: "TLS10, TLS11, TLS12 or TLS13" })
    .optional(),
  cipher_suites: z
    .array(
      z.enum(Object.keys(CIPHER_SUITES), { error: "a cipher suite of Go's tls.CipherSuites()" }),
    )
    .optional(),
  curve_preferences: z
    .array(z.enum(Object.keys(CURVES), { error: "CurveP256, CurveP384, CurveP521 or X25519" }))
    .optional(),
  prefer_server_cipher_suites: z.boolean({ error: "true or false" }).optional(),
});

const FileSchema = z.strictObject({
  tls_server_config: TlsSchema.nullish(),
  http_server_config: z
    .strictObject({
      http2: z.boolean({ error: "true or false" }).optional(),
      headers: z.record(str, str.nullish(), { error: "a mapping of header to value" }).optional(),
    })
    .nullish(),
  basic_auth_users: z
    .record(str, str.regex(BCRYPT_HASH, { error: "a bcrypt hash" }), {
      error: "a mapping of user name to bcrypt hash",
    })
    .nullish(),
  rate_limit: z
    .strictObject({ interval: z.union([str, z.number()]).optional(), burst: z.number().optional() })
    .nullish(),
});

type TlsSection = z.infer<typeof TlsSchema>;

/** Reads and validates the file at `file` and the files it names; throws WebConfigError. */
export function loadWebConfig(file: string, read: (path: string) => Buffer): WebConfig {
  const path = resolve(file);
  const fail = (key: string, message: string): never => {
    throw new WebConfigError(path, key, message);
  };
  let doc: unknown;
  try {
    doc = parseYaml(read(path).toString("utf8")) ?? {};
  } catch (err) {
    return fail("", errorLine(err));
  }
  const parsed = FileSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    if (issue.code === "unrecognized_keys")
      return fail([...issue.path, issue.keys[0]].join("."), "unknown key");
    return fail(issue.path.join(".") || "(top)", `expected ${issue.message}`);
  }
  const c = parsed.data;
  const interval = c.rate_limit?.interval;
  if (interval !== undefined && !/^0*(?:[a-zµ]+)?$/.test(String(interval)))
    fail("rate_limit", "not supported by sandbox-exporter; remove it or set interval to 0");
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(c.http_server_config?.headers ?? {})) {
    const allowed = HEADERS[name];
    if (!allowed) fail(`http_server_config.headers.${name}`, "a header that cannot be configured");
    if (value === undefined || value === null || value === "") continue;
    if (allowed && allowed.length > 0 && !allowed.includes(value))
      fail(`http_server_config.headers.${name}`, `expected one of ${allowed.join(", ")}`);
    headers[name] = value;
  }
  const tls = c.tls_server_config
    ? tlsSettings(c.tls_server_config, dirname(path), read, fail)
    : undefined;
  return {
    file: path,
    ...(tls ? { tls } : {}),
    headers,
    users: c.basic_auth_users ?? {},
    http2: c.http_server_config?.http2 ?? true,
  };
}

/** exporter-toolkit's JoinDir: a relative path is relative to the config file's directory. */
function joinDir(dir: string, p: string | undefined): string | undefined {
  return p === undefined || p === "" || isAbsolute(p) ? p : join(dir, p);
}

function tlsSettings(
  t: TlsSection,
  dir: string,
  read: (path: string) => Buffer,
  fail: (key: string, message: string) => never,
): TlsSettings | undefined {
  const k = (name: string): string => `tls_server_config.${name}`;
  const enabled = [
    t.cert,
    t.key,
    t.cert_file,
    t.key_file,
    t.client_ca,
    t.client_ca_file,
    t.client_auth_type,
  ];
  if (enabled.every((v) => v === undefined || v === "")) return undefined;
  const source = (
    inline: string | undefined,
    fileKey: string,
    file: string | undefined,
  ): Buffer | undefined => {
    const path = joinDir(dir, file);
    if (inline && path)
      fail(k(fileKey), `either ${fileKey.replace(/_file$/, "")} or ${fileKey}, not both`);
    if (inline) return Buffer.from(inline);
    if (!path) return undefined;
    try {
      return read(path);
    } catch (err) {
      return fail(k(fileKey), `cannot read ${path}: ${errorLine(err)}`);
    }
  };
  const cert =
    source(t.cert, "cert_file", t.cert_file) ??
    fail(k("cert_file"), "missing one of cert or cert_file");
  const key =
    source(t.key, "key_file", t.key_file) ?? fail(k("key_file"), "missing one of key or key_file");
  const clientCa = source(t.client_ca, "client_ca_file", t.client_ca_file);
  const clientAuth: ClientAuthType =
    t.client_auth_type === "RequireClientCert"
      ? "RequireAnyClientCert"
      : (t.client_auth_type ?? "NoClientCert");
  if (clientCa && clientAuth === "NoClientCert")
    fail(k("client_ca_file"), "client CAs are configured without a client_auth_type");
  // Node would otherwise verify client certificates against the public web roots.
  if (
    !clientCa &&
    (clientAuth === "VerifyClientCertIfGiven" || clientAuth === "RequireAndVerifyClientCert")
  )
    fail(k("client_auth_type"), `${clientAuth} needs client_ca_file (or client_ca)`);
  if (t.client_allowed_sans && clientAuth === "NoClientCert")
    fail(k("client_allowed_sans"), "needs a client_auth_type that asks for a certificate");
  const minVersion = TLS_VERSIONS[t.min_version ?? "TLS12"] as SecureVersion;
  const maxVersion = TLS_VERSIONS[t.max_version ?? "TLS13"] as SecureVersion;
  if (VERSION_ORDER.indexOf(minVersion) > VERSION_ORDER.indexOf(maxVersion))
    fail(k("min_version"), "is above max_version");
  const tls12 = (t.cipher_suites ?? [])
    .map((s) => CIPHER_SUITES[s])
    .filter((s) => typeof s === "string");
  const settings: TlsSettings = {
    cert,
    key,
    ...(clientCa ? { clientCa } : {}),
    clientAuth,
    ...(t.client_allowed_sans ? { clientAllowedSans: t.client_allowed_sans } : {}),
    minVersion,
    maxVersion,
    ...(tls12.length > 0 ? { ciphers: tls12.join(":") } : {}),
    ...(t.curve_preferences?.length
      ? { ecdhCurve: t.curve_preferences.map((c) => CURVES[c]).join(":") }
      : {}),
    honorCipherOrder: t.prefer_server_cipher_suites ?? true,
  };
  try {
    createSecureContext(secureContextOptions(settings));
  } catch (err) {
    fail(
      k(t.cert_file ? "cert_file" : "cert"),
      `the certificate, key or CA cannot be used: ${errorLine(err)}`,
    );
  }
  return settings;
}

/** The node:tls options of the secure context: certificate, CA, versions, suites, curves. */
export function secureContextOptions(t: TlsSettings) {
  return {
    cert: t.cert,
    key: t.key,
    ...(t.clientCa ? { ca: t.clientCa } : {}),
    minVersion: t.minVersion,
    maxVersion: t.maxVersion,
    ...(t.ciphers ? { ciphers: t.ciphers } : {}),
    ...(t.ecdhCurve ? { ecdhCurve: t.ecdhCurve } : {}),
    honorCipherOrder: t.honorCipherOrder,
  };
}

/** How the handshake treats a client certificate: ask for one, and let OpenSSL refuse a bad one. */
export function verifyMode(t: TlsSettings | undefined): {
  requestCert: boolean;
  rejectUnauthorized: boolean;
} {
  const auth = t?.clientAuth ?? "NoClientCert";
  return {
    requestCert: auth !== "NoClientCert",
    rejectUnauthorized: auth === "RequireAndVerifyClientCert",
  };
}

/**
 * Why an established connection breaks the client-certificate policy (what OpenSSL's verify
 * mode cannot say alone), or undefined when it may proceed.
 */
export function clientCertRefusal(
  t: TlsSettings | undefined,
  socket: TLSSocket,
): string | undefined {
  if (!t || t.clientAuth === "NoClientCert") return undefined;
  const peer = socket.getPeerX509Certificate();
  if (!peer) {
    return t.clientAuth === "RequireAnyClientCert" || t.clientAuth === "RequireAndVerifyClientCert"
      ? "no client certificate"
      : undefined;
  }
  if (
    (t.clientAuth === "VerifyClientCertIfGiven" || t.clientAuth === "RequireAndVerifyClientCert") &&
    !socket.authorized
  )
    return `client certificate not verified: ${String(socket.authorizationError)}`;
  if (t.clientAllowedSans && !sansOf(peer).some((san) => t.clientAllowedSans?.includes(san)))
    return "client certificate has no allowed SAN";
  return undefined;
}

/** DNS names, IP addresses, e-mail addresses and URIs of a certificate's subjectAltName. */
function sansOf(cert: X509Certificate): string[] {
  const out: string[] = [];
  const entry = /(?:DNS|IP Address|email|URI):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g;
  for (const m of (cert.subjectAltName ?? "").matchAll(entry)) {
    const v = m[1] ?? "";
    out.push(v.startsWith('"') ? (JSON.parse(v) as string) : v);
  }
  return out;
}
