import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import bcrypt from "bcryptjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWebConfig, WebConfigError } from "../../src/server/web-config.js";
import { makePki, type Pki } from "./tls-fixtures.js";

let pki: Pki;
let dir: string;
const HASH = bcrypt.hashSync("pw", 4);

beforeAll(() => {
  pki = makePki();
  dir = mkdtempSync(join(tmpdir(), "web-config-"));
});
afterAll(() => {
  pki.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `text` as a web config file in the test directory (or `where`) and loads it. */
function load(text: string, where = dir, name = "web.yml") {
  const file = join(where, name);
  writeFileSync(file, text);
  return loadWebConfig(file, (p) => readFileSync(p));
}

/** The WebConfigError `text` raises. */
function refusal(text: string): WebConfigError {
  try {
    load(text);
  } catch (err) {
    expect(err).toBeInstanceOf(WebConfigError);
    return err as WebConfigError;
  }
  throw new Error("the file was accepted");
}

describe("loadWebConfig", () => {
  it("reads exporter-toolkit's keys, with its defaults", () => {
    const web = load(
      [
        "tls_server_config:",
        `  cert_file: ${pki.dir}/server-a.crt`,
        `  key_file: ${pki.dir}/server-a.key`,
        "  client_auth_type: RequireAndVerifyClientCert",
        `  client_ca_file: ${pki.dir}/ca1.crt`,
        "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256]",
        "  curve_preferences: [X25519, CurveP256]",
        "http_server_config:",
        "  headers:",
        "    X-Frame-Options: deny",
        "    Content-Security-Policy: \"default-src 'self'\"",
        "    X-XSS-Protection: ''",
        "basic_auth_users:",
        `  alice: '${HASH}'`,
        "",
      ].join("\n"),
    );
    expect(web.tls).toMatchObject({
      clientAuth: "RequireAndVerifyClientCert",
      minVersion: "TLSv1.2",
      maxVersion: "TLSv1.3",
      // TLS 1.3 suites are not configurable, as in Go: only the TLS 1.2 one is passed on.
      ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256",
      ecdhCurve: "X25519:P-256",
      honorCipherOrder: true,
    });
    expect(web.tls?.cert.equals(pki.pem("server-a.crt"))).toBe(true);
    // A blank header is unset, as exporter-toolkit documents.
    expect(web.headers).toEqual({
      "X-Frame-Options": "deny",
      "Content-Security-Policy": "default-src 'self'",
    });
    expect(web.users).toEqual({ alice: HASH });
    expect(web.http2).toBe(true);
  });

  it("resolves relative file paths against the config file's directory", () => {
    const web = load(
      ["tls_server_config:", "  cert_file: server-b.crt", "  key_file: ./server-b.key", ""].join(
        "\n",
      ),
      pki.dir,
    );
    expect(web.tls?.cert.equals(pki.pem("server-b.crt"))).toBe(true);
    expect(web.tls?.key.equals(pki.pem("server-b.key"))).toBe(true);
  });

  it("accepts an empty file: no TLS, no users, no headers", () => {
    expect(load("")).toMatchObject({ users: {}, headers: {}, http2: true });
    expect(load("").tls).toBeUndefined();
  });

  it("names the file and the path of an unknown key", () => {
    const err = refusal("tls_server_config:\n  cert_fle: x.crt\n");
    expect(err.code).toBe("ERR_WEB_CONFIG");
    expect(err.message).toBe(
      `web config ${join(dir, "web.yml")}: tls_server_config.cert_fle: unknown key`,
    );
    expect(refusal("basic_auth_user: {}\n").message).toContain(": basic_auth_user: unknown key");
  });

  it("refuses a SHA-256 password in basic_auth_users, naming the user but not the value", () => {
    const sha = "ab".repeat(32);
    const err = refusal(`basic_auth_users:\n  bob: ${sha}\n`);
    expect(err.message).toContain("basic_auth_users.bob: expected a bcrypt hash");
    expect(err.message).not.toContain(sha);
  });

  it("refuses headers outside exporter-toolkit's set, and values outside their enumerations", () => {
    expect(refusal("http_server_config:\n  headers:\n    Server: x\n").message).toContain(
      "http_server_config.headers.Server: a header that cannot be configured",
    );
    expect(
      refusal("http_server_config:\n  headers:\n    X-Frame-Options: allow\n").message,
    ).toContain("http_server_config.headers.X-Frame-Options: expected one of deny, sameorigin");
  });

  it("refuses what Node cannot honour or exporter-toolkit refuses", () => {
    const tls = (extra: string) =>
      `tls_server_config:\n  cert_file: ${pki.dir}/server-a.crt\n  key_file: ${pki.dir}/server-a.key\n${extra}`;
    expect(refusal(tls("  client_auth_type: Sometimes\n")).message).toContain(
      "tls_server_config.client_auth_type: expected one of NoClientCert,",
    );
    expect(refusal(tls(`  client_ca_file: ${pki.dir}/ca1.crt\n`)).message).toContain(
      "client CAs are configured without a client_auth_type",
    );
    expect(refusal(tls("  client_auth_type: RequireAndVerifyClientCert\n")).message).toContain(
      "RequireAndVerifyClientCert needs client_ca_file",
    );
    expect(refusal(tls("  min_version: TLS13\n  max_version: TLS12\n")).message).toContain(
      "tls_server_config.min_version: is above max_version",
    );
    expect(refusal(tls("  min_version: TLSv1.2\n")).message).toContain(
      "tls_server_config.min_version: expected TLS10, TLS11, TLS12 or TLS13",
    );
    expect(refusal(tls("  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n")).message).toContain(
      "tls_server_config.cipher_suites.0: expected a cipher suite",
    );
    expect(refusal("rate_limit:\n  interval: 1s\n  burst: 5\n").message).toContain(
      "rate_limit: not supported",
    );
    expect(refusal("tls_server_config:\n  key_file: x.key\n").message).toContain(
      "tls_server_config.cert_file: missing one of cert or cert_file",
    );
  });

  it("refuses a certificate whose key does not match", () => {
    const err = refusal(
      `tls_server_config:\n  cert_file: ${pki.dir}/server-a.crt\n  key_file: ${pki.dir}/server-b.key\n`,
    );
    expect(err.message).toContain(
      "tls_server_config.cert_file: the certificate, key or CA cannot be used",
    );
  });

  it("names a file it cannot read", () => {
    const err = refusal("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n");
    expect(err.message).toContain(
      `tls_server_config.cert_file: cannot read ${join(dir, "missing.crt")}`,
    );
  });
});
