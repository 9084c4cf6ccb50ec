import { X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import bcrypt from "bcryptjs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunningServer } from "../../src/server/server.js";
import { loadWebConfig, type WebConfig } from "../../src/server/web-config.js";
import { serveListener } from "../helpers/serve.js";
import { makePki, type Pki } from "./tls-fixtures.js";

let pki: Pki;
const servers: RunningServer[] = [];
beforeAll(() => {
  pki = makePki();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(() => pki.remove());

/** Writes a web config file next to the certificates and loads it. */
function webConfig(lines: string[]): WebConfig {
  const file = join(pki.dir, "web.yml");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return loadWebConfig(file, (p) => readFileSync(p));
}

const SERVER_A = ["tls_server_config:", "  cert_file: server-a.crt", "  key_file: server-a.key"];
const SERVER_B = ["tls_server_config:", "  cert_file: server-b.crt", "  key_file: server-b.key"];
const MTLS = ["  client_auth_type: RequireAndVerifyClientCert", "  client_ca_file: ca1.crt"];

const serve = async (web: WebConfig): Promise<RunningServer> =>
  (await serveListener(servers, { webConfig: web })).server;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** SHA-256 fingerprint of the certificate the server showed. */
  fingerprint: string;
}

/** GET `path` over a new TLS connection, trusting ca1, with the client certificate `client`. */
function get(
  server: RunningServer,
  path: string,
  options: { client?: string; authorization?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: server.port,
        path,
        agent: false,
        ca: pki.pem("ca1.crt"),
        ...(options.client
          ? { cert: pki.pem(`${options.client}.crt`), key: pki.pem(`${options.client}.key`) }
          : {}),
        headers: options.authorization ? { authorization: options.authorization } : {},
      },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        res.resume();
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, fingerprint }),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const fingerprintOf = (name: string) => new X509Certificate(pki.pem(name)).fingerprint256;

describe("TLS from the web config file", () => {
  it("serves HTTPS with the file's certificate and the configured headers", async () => {
    const server = await serve(
      webConfig([
        ...SERVER_A,
        "http_server_config:",
        "  headers:",
        "    X-Content-Type-Options: nosniff",
      ]),
    );
    expect(server.url).toMatch(/^https:/);
    const res = await get(server, "/metrics");
    expect(res.status).toBe(200);
    expect(res.fingerprint).toBe(fingerprintOf("server-a.crt"));
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("with RequireAndVerifyClientCert refuses a client without a certificate or with another CA's", async () => {
    const server = await serve(webConfig([...SERVER_A, ...MTLS]));
    await expect(get(server, "/metrics")).rejects.toThrow();
    await expect(get(server, "/metrics", { client: "stranger" })).rejects.toThrow();
    expect((await get(server, "/metrics", { client: "client" })).status).toBe(200);
  });

  it("refuses a verified certificate whose SAN is not allowed", async () => {
    const server = await serve(
      webConfig([...SERVER_A, ...MTLS, "  client_allowed_sans: [scraper.example]"]),
    );
    await expect(get(server, "/metrics", { client: "other-san" })).rejects.toThrow();
    expect((await get(server, "/metrics", { client: "client" })).status).toBe(200);
  });

  it("with VerifyClientCertIfGiven lets a client without a certificate in, not one from another CA", async () => {
    const server = await serve(
      webConfig([
        ...SERVER_A,
        "  client_auth_type: VerifyClientCertIfGiven",
        "  client_ca_file: ca1.crt",
      ]),
    );
    expect((await get(server, "/metrics")).status).toBe(200);
    await expect(get(server, "/metrics", { client: "stranger" })).rejects.toThrow();
    expect((await get(server, "/metrics", { client: "client" })).status).toBe(200);
  });

  it("with RequireAnyClientCert asks for a certificate but does not verify it", async () => {
    const server = await serve(
      webConfig([...SERVER_A, "  client_auth_type: RequireAnyClientCert"]),
    );
    await expect(get(server, "/metrics")).rejects.toThrow();
    expect((await get(server, "/metrics", { client: "stranger" })).status).toBe(200);
  });
});

describe("setWebConfig (a reload)", () => {
  it("swaps the certificate, the client-certificate policy and the users for new connections", async () => {
    const server = await serve(webConfig(SERVER_A));
    expect((await get(server, "/metrics")).fingerprint).toBe(fingerprintOf("server-a.crt"));
    const hash = bcrypt.hashSync("pw", 4);
    server.setWebConfig(
      webConfig([...SERVER_B, ...MTLS, "basic_auth_users:", `  alice: '${hash}'`]),
    );
    await expect(get(server, "/metrics")).rejects.toThrow();
    const refused = await get(server, "/metrics", { client: "client" });
    expect(refused.fingerprint).toBe(fingerprintOf("server-b.crt"));
    expect(refused.status).toBe(401);
    const basic = `Basic ${Buffer.from("alice:pw").toString("base64")}`;
    expect((await get(server, "/metrics", { client: "client", authorization: basic })).status).toBe(
      200,
    );
  });

  it("refuses to turn TLS off, and changes nothing", async () => {
    const server = await serve(webConfig(SERVER_A));
    expect(() => server.setWebConfig(webConfig(["basic_auth_users: {}"]))).toThrow(
      /tls_server_config: turning TLS off takes a restart/,
    );
    expect((await get(server, "/metrics")).status).toBe(200);
  });
});
