import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { isSecretPath, redactConfig } from "../../src/config/redact.js";

const HASH = "ab".repeat(32);

describe("redactConfig", () => {
  const { config } = loadConfig({
    argv: ["--config", "c.yaml"],
    env: { SANDBOX_API_KEY: "topsecret-key" },
    readFile: () =>
      [
        `server: {basicAuthUsers: {alice: "${HASH}"}, bearerTokenFile: /run/token}`,
        "probe: {accessToken: probe-token-value}",
        "fieldMap: {sandbox: {accessToken: envdAccessToken}}",
        "platform: {apiKeyFile: /run/key-path}",
      ].join("\n"),
  });
  // The key file content comes from the same readFile; set the key from env to win over it.
  const red = redactConfig(config);

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
    ["fieldMap.sandbox.accessToken", false],
  ])("%s -> %s", (path, secret) => {
    expect(isSecretPath(path)).toBe(secret);
  });
});
