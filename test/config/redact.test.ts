import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/catalog.js";
import { isSecretPath, redactConfig } from "../../src/config/redact.js";
import type { Config } from "../../src/config/settings.js";

/** A bcrypt hash (exporter-toolkit's stand-in for "fakepassword"). */
const HASH = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

describe("redactConfig", () => {
  const { config } = loadConfig({
    argv: ["--config", "c.yaml"],
    env: { SANDBOX_API_KEY: "topsecret-key" },
    readFile: () =>
      [
        `server: {basicAuthUsers: {alice: "${HASH}"}, bearerTokenFile: /run/token}`,
        "fieldMap: {sandbox: {accessToken: envdAccessToken}}",
        "platform: {apiKeyFile: /run/key-path}",
      ].join("\n"),
  });
  // The key file content comes from the same readFile; set the key from env to win over it.
  // No section takes unknown keys, so a token-valued setting a later version may add is put in by hand.
  const red = redactConfig({
    ...config,
    probe: { ...config.probe, accessToken: "probe-token-value" },
  } as Config);

  it("shows the API key as *** and leaves the original untouched", () => {
    expect(red.platform.apiKey).toBe("***");
    expect(config.platform.apiKey).toBe("topsecret-key");
    expect(JSON.stringify(red)).not.toContain("topsecret-key");
  });

  it("hides password hashes and token values, but not the paths of secret files", () => {
    expect(red.server.basicAuthUsers).toEqual({ alice: "***" });
    expect((red.probe as Record<string, unknown>).accessToken).toBe("***");
    expect(red.server.bearerTokenFile).toBe("/run/token");
    expect(red.platform.apiKeyFile).toBe("/run/key-path");
  });

  it("keeps field-map entries, which name fields rather than hold secrets", () => {
    expect(red.fieldMap.sandbox).toEqual({ accessToken: "envdAccessToken" });
  });

  it("leaves an empty key empty, so an unset key is visible as such", () => {
    const { config: bare } = loadConfig({ argv: [], env: {} });
    expect(redactConfig(bare).platform.apiKey).toBe("");
    expect(redactConfig(bare)).toEqual(bare);
  });
});

describe("isSecretPath", () => {
  it.each([
    ["platform.apiKey", true],
    ["server.basicAuthUsers.bob", true],
    ["policy.webhook.password", true],
    ["platform.apiKeyFile", false],
    ["server.bearerTokenFile", false],
    ["platform.authHeader", false],
    ["platform.authStyle", false],
    ["server.tlsKeyFile", false],
    ["probe.accessToken", true],
    ["probe.sessionCookie", true],
    ["fieldMap.sandbox.accessToken", false],
  ])("%s -> %s", (path, secret) => {
    expect(isSecretPath(path)).toBe(secret);
  });

  it("calls no setting secret but the API key (the basic-auth users are a map of hashes)", () => {
    const { config } = loadConfig({ argv: [], env: {} });
    const leaves: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== "object" || node === null || Array.isArray(node)) leaves.push(path);
      else for (const [k, v] of Object.entries(node)) walk(v, path ? `${path}.${k}` : k);
    };
    walk(config, "");
    expect(leaves.filter(isSecretPath)).toEqual(["platform.apiKey"]);
    expect(isSecretPath("server.basicAuthUsers.alice")).toBe(true);
  });
});
