// A reload reads only the secret files a started feature applies, and scrubs each one it reads
// from the moment it is read (each test says what the root before the feature modules did).
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { systemClock } from "../../src/util/clock.js";
import { createLogger } from "../../src/util/logger.js";
import { Secrets } from "../../src/util/secrets.js";

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((s) => s()));
});
const sign = (secret: string, body: string): string =>
  createHash("sha256")
    .update(secret + body)
    .digest("base64url");
const env = { SANDBOX_API_URL: "http://127.0.0.1:9", SANDBOX_API_KEY: "k-apikey-123" };
function file(name: string, content: string): string {
  const p = join(mkdtempSync(join(tmpdir(), "reload-secrets-")), name);
  writeFileSync(p, content);
  return p;
}
async function start(
  argv: string[],
  more: { reloadConfig?: () => ReturnType<typeof loadConfig>["config"] } = {},
) {
  const { config } = loadConfig({ argv: ["--listen", "127.0.0.1:0", ...argv], env });
  const secrets = new Secrets();
  const logged: string[] = [];
  const logger = createLogger("debug", "json", { write: (l: string) => logged.push(l) });
  const exporter = await startExporter(config, {
    logger,
    clock: systemClock,
    manual: true,
    secrets,
    ...(more.reloadConfig ? { reloadConfig: more.reloadConfig } : {}),
  });
  stops.push(() => exporter.stop());
  return { exporter, config, secrets, logged };
}

describe("reload and secrets", () => {
  it("a rotated E2B signing secret is scrubbed after reload (old: read() did secrets.add)", async () => {
    const secretFile = file("e2b.secret", "first-secret-0001\n");
    const { exporter, secrets, logged } = await start(["--e2b-webhook-secret-file", secretFile]);
    const ROTATED = "rotated-secret-5678";
    writeFileSync(secretFile, `${ROTATED}\n`);
    expect((await exporter.reload()).ok).toBe(true);
    // A signed delivery whose bad field carries the (new) secret: the 400 answer names it.
    const body = JSON.stringify({
      version: "v1",
      id: "ev-1",
      type: "sandbox.lifecycle.created",
      sandboxId: "sbx-1",
      sandboxTemplateId: "tpl-1",
      timestamp: `at ${ROTATED}`,
    });
    const res = await fetch(`${exporter.server.url}/webhooks/e2b`, {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "e2b-webhook-id": "w",
        "e2b-delivery-id": "d",
        "e2b-signature-version": "v1",
        "e2b-signature": sign(ROTATED, body),
      },
    });
    const answer = await res.text();
    expect(answer).not.toContain(ROTATED);
    for (const l of logged) expect(l).not.toContain(ROTATED);
    expect(secrets.scrub(`x ${ROTATED} x`)).not.toContain(ROTATED);
  });

  it("a reload does not fail on the admin token file, read at start only (old: not re-read)", async () => {
    const admin = file("admin", "admin-token-abcdef\n");
    const { exporter } = await start(["--admin-token-file", admin]);
    rmSync(admin);
    const r = await exporter.reload();
    expect(r).toEqual({ ok: true });
  });

  it("a reload that turns the policy on (takes a restart) is not failed by its webhook header file (old: warned, ok)", async () => {
    const rules = file("rules.yaml", "rules: []\n");
    const { config } = loadConfig({ argv: ["--listen", "127.0.0.1:0"], env });
    const next = {
      ...config,
      policy: {
        ...config.policy,
        enabled: true,
        file: rules,
        webhook: {
          url: "http://127.0.0.1:9/hook",
          headerName: "Authorization",
          headerValueFile: "/nonexistent/reload-secrets/header",
          timeoutMs: 1000,
          retries: 0,
        },
      },
    };
    const { exporter, logged } = await start([], { reloadConfig: () => next });
    const r = await exporter.reload();
    expect(r).toEqual({ ok: true });
    expect(logged.some((l) => l.includes("turning the policy engine on takes a restart"))).toBe(
      true,
    );
  });

  it("logs a failed reload through the err serializer: its code kept, the API key scrubbed (old: err was a string)", async () => {
    const secrets = new Secrets();
    secrets.add(env.SANDBOX_API_KEY);
    const logged: string[] = [];
    const logger = createLogger("debug", "json", { write: (l: string) => logged.push(l) }, secrets);
    const { config } = loadConfig({ argv: ["--listen", "127.0.0.1:0"], env });
    const exporter = await startExporter(config, {
      logger,
      clock: systemClock,
      manual: true,
      secrets,
      reloadConfig: () => {
        const why = `the platform refused key ${env.SANDBOX_API_KEY}\nat line 2`;
        throw Object.assign(new Error(why), { code: "ERR_CONFIG_TEST" });
      },
    });
    stops.push(() => exporter.stop());
    const r = await exporter.reload();
    expect(r.ok).toBe(false);
    expect(r.error).toContain("the platform refused key");
    expect(r.error).not.toContain(env.SANDBOX_API_KEY);
    const lines = logged.map((l) => JSON.parse(l) as Record<string, unknown>);
    const failed = lines.find((l) => l.msg === "reload failed; keeping the previous configuration");
    expect(failed?.err).toMatchObject({ type: "Error", code: "ERR_CONFIG_TEST" });
    const err = failed?.err as { message: string; stack: string };
    expect(err.message).toContain("the platform refused key");
    expect(err.message).not.toContain(env.SANDBOX_API_KEY);
    expect(err.stack).not.toContain(env.SANDBOX_API_KEY);
    for (const l of logged) expect(l).not.toContain(env.SANDBOX_API_KEY);
  });

  it("a reload that names an E2B secret file while the webhook was off is not failed by it (old: ignored)", async () => {
    const { config } = loadConfig({ argv: ["--listen", "127.0.0.1:0"], env });
    const bad = file("e2b.secret", "a\r\nb\n");
    const next = { ...config, webhooks: { ...config.webhooks, e2bSecretFile: bad } };
    const { exporter } = await start([], { reloadConfig: () => next });
    expect(await exporter.reload()).toEqual({ ok: true });
  });
});

describe("start", () => {
  it("names the bad web config file first when a secret file is bad too (the listener is read first)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reload-secrets-"));
    const web = join(dir, "web.yml");
    writeFileSync(web, "basic_auth_users: [not, a, map]\n");
    const admin = join(dir, "admin");
    writeFileSync(admin, "a\r\nb\n");
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--web.config.file", web, "--admin-token-file", admin],
      env: { SANDBOX_API_URL: "http://127.0.0.1:9", SANDBOX_API_KEY: "k" },
    });
    const start = startExporter(config, {
      logger: createLogger("silent", "json"),
      clock: systemClock,
      manual: true,
    });
    await expect(start).rejects.toThrow(/server\.webConfigFile/);
  });
});
