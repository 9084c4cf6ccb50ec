// --web.config.file through the whole exporter: loading, reload (POST /-/reload and SIGHUP's path),
// the deprecated listener settings and how they combine.
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { TLSSocket } from "node:tls";
import bcrypt from "bcryptjs";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { ConfigError } from "../../src/config/load.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { systemClock } from "../../src/util/clock.js";
import { makePki } from "./tls-fixtures.js";

let sim: Simulator;
let dir: string;
let exporter: Exporter | undefined;
const ALICE = bcrypt.hashSync("alice-pw", 4);
const BOB = bcrypt.hashSync("bob-pw", 4);

beforeAll(async () => {
  sim = await startSimulator({ sandboxes: 1 });
  dir = mkdtempSync(join(tmpdir(), "web-config-app-"));
});
afterEach(async () => {
  await exporter?.stop();
  exporter = undefined;
});
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

const readFile = (path: string) => readFileSync(path, "utf8");
const env = () => ({ SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: "k" });
const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
});

/** Starts an exporter from `argv`, re-reading its configuration on reload; log lines collected. */
async function start(argv: string[], lines: string[] = []): Promise<Exporter> {
  const args = ["--listen", "127.0.0.1:0", "--retries", "0", "--web.enable-lifecycle", ...argv];
  const { config } = loadConfig({ argv: args, env: env(), readFile });
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  exporter = await startExporter(config, {
    logger: pino({ level: "info" }, sink),
    clock: systemClock,
    manual: true,
    reloadConfig: () => loadConfig({ argv: args, env: env(), readFile }).config,
  });
  return exporter;
}

async function reloadSuccessful(e: Exporter, headers: Record<string, string>): Promise<string> {
  const text = await (await fetch(`${e.server.url}/metrics`, { headers })).text();
  return /^sandbox_exporter_config_last_reload_successful (\S+)$/m.exec(text)?.[1] ?? "absent";
}

describe("--web.config.file in the exporter", () => {
  it("takes new users on POST /-/reload, and keeps the last good file when the new one is bad", async () => {
    const file = join(dir, "users.yml");
    writeFileSync(file, `basic_auth_users:\n  alice: '${ALICE}'\n`);
    const e = await start(["--web.config.file", file]);
    const metrics = `${e.server.url}/metrics`;
    expect((await fetch(metrics)).status).toBe(401);
    expect((await fetch(metrics, { headers: basic("alice", "alice-pw") })).status).toBe(200);

    writeFileSync(file, `basic_auth_users:\n  bob: '${BOB}'\n`);
    const reload = () =>
      fetch(`${e.server.url}/-/reload`, { method: "POST", headers: basic("alice", "alice-pw") });
    expect((await reload()).status).toBe(200);
    expect((await fetch(metrics, { headers: basic("alice", "alice-pw") })).status).toBe(401);
    expect((await fetch(metrics, { headers: basic("bob", "bob-pw") })).status).toBe(200);

    writeFileSync(file, `basic_auth_users:\n  bob: '${BOB}'\n  eve: not-a-hash\n`);
    const failed = await fetch(`${e.server.url}/-/reload`, {
      method: "POST",
      headers: basic("bob", "bob-pw"),
    });
    expect(failed.status).toBe(500);
    expect(await failed.text()).toContain(`${file}: basic_auth_users.eve: expected a bcrypt hash`);
    expect((await fetch(metrics, { headers: basic("bob", "bob-pw") })).status).toBe(200);
    expect(await reloadSuccessful(e, basic("bob", "bob-pw"))).toBe("0");
  });

  it("stops the start with a ConfigError naming the file and the key", async () => {
    const file = join(dir, "bad.yml");
    writeFileSync(file, "tls_server_config:\n  certfile: x.crt\n");
    const err = await start(["--web.config.file", file]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(
      `server.webConfigFile (file ${file}): expected a valid exporter-toolkit web config file, got web config ${file}: tls_server_config.certfile: unknown key`,
    );
  });

  it("is read from SANDBOX_EXPORTER_WEB_CONFIG_FILE too", () => {
    const { config } = loadConfig({
      argv: [],
      env: { ...env(), SANDBOX_EXPORTER_WEB_CONFIG_FILE: "/etc/web.yml" },
    });
    expect(config.server.webConfigFile).toBe("/etc/web.yml");
  });
});

describe("a reload of the web config file (SIGHUP's path)", () => {
  it("serves the new certificate to new connections, and keeps it when the next file is bad", async () => {
    const pki = makePki();
    try {
      const file = join(pki.dir, "web.yml");
      const tls = (cert: string, key: string) =>
        writeFileSync(
          file,
          `tls_server_config:\n  cert_file: ${cert}.crt\n  key_file: ${key}.key\n`,
        );
      /** SHA-256 fingerprint of the certificate a new connection is shown. */
      const shown = () =>
        new Promise<string>((resolve, reject) => {
          const req = request(
            {
              host: "127.0.0.1",
              port: e.server.port,
              path: "/healthz",
              agent: false,
              ca: pki.pem("ca1.crt"),
            },
            (res) => {
              res.resume();
              resolve((res.socket as TLSSocket).getPeerCertificate().fingerprint256);
            },
          );
          req.on("error", reject);
          req.end();
        });
      const of = (name: string) => new X509Certificate(pki.pem(name)).fingerprint256;
      tls("server-a", "server-a");
      const e = await start(["--web.config.file", file]);
      expect(e.server.url).toMatch(/^https:/);
      expect(await shown()).toBe(of("server-a.crt"));
      tls("server-b", "server-b");
      expect(await e.reload()).toEqual({ ok: true });
      expect(await shown()).toBe(of("server-b.crt"));
      tls("server-a", "server-b");
      const bad = await e.reload();
      expect(bad.ok).toBe(false);
      expect(bad.error).toContain(
        "tls_server_config.cert_file: the certificate, key or CA cannot be used",
      );
      expect(await shown()).toBe(of("server-b.crt"));
    } finally {
      pki.remove();
    }
  });
});

describe("the deprecated listener settings", () => {
  it("still work, with one deprecation warning at start", async () => {
    const token = join(dir, "token");
    writeFileSync(token, "tok\n");
    const cfg = join(dir, "legacy.yml");
    writeFileSync(cfg, `server:\n  basicAuthUsers:\n    alice: '${ALICE}'\n`);
    const lines: string[] = [];
    const e = await start(["--config", cfg, "--web-bearer-token-file", token], lines);
    const metrics = `${e.server.url}/metrics`;
    expect((await fetch(metrics)).status).toBe(401);
    expect((await fetch(metrics, { headers: { authorization: "Bearer tok" } })).status).toBe(200);
    expect((await fetch(metrics, { headers: basic("alice", "alice-pw") })).status).toBe(200);
    await e.reload();
    const warnings = lines.filter((l) => l.includes("deprecated listener settings"));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string).settings).toEqual([
      "server.bearerTokenFile",
      "server.basicAuthUsers",
    ]);
  });

  it("refuse a SHA-256 password, naming the setting and the bcrypt alternative", () => {
    const cfg = join(dir, "sha.yml");
    writeFileSync(cfg, `server:\n  basicAuthUsers:\n    bob: ${"ab".repeat(32)}\n`);
    const err = (() => {
      try {
        loadConfig({ argv: ["--config", cfg], env: env(), readFile });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error("accepted");
    })();
    expect(err.message).toContain(
      `server.basicAuthUsers.bob (file ${cfg}:server.basicAuthUsers.bob): expected a bcrypt hash, not a SHA-256 (no longer accepted): make one with htpasswd -nBC 10 "" | tr -d ':\\n', or move the users to basic_auth_users in --web.config.file`,
    );
    expect(err.message).not.toContain("ab".repeat(32));
  });

  it("are refused together with --web.config.file", () => {
    const load = () =>
      loadConfig({
        argv: [
          "--web.config.file",
          "/etc/web.yml",
          "--web-tls-cert-file",
          "/c",
          "--web-tls-key-file",
          "/k",
        ],
        env: env(),
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(
      "server.tlsCertFile (flag --web-tls-cert-file): expected not set together with server.webConfigFile (--web.config.file), which replaces it",
    );
  });
});
