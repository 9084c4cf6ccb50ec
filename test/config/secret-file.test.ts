import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { ConfigError } from "../../src/config/errors.js";
import { readSecretFile } from "../../src/config/secret-file.js";
import { systemClock } from "../../src/util/clock.js";
import { createLogger } from "../../src/util/logger.js";

const files: Record<string, string> = {
  "ok.token": "  s3cr3t-token\n",
  "crlf.token": "s3cr3t\r\n-token\n",
  "lf.token": "\ns3cr3t\n-token\n",
};
const read = (path: string): string => {
  const text = files[path];
  if (text === undefined) throw new Error(`ENOENT: ${path}`);
  return text;
};

describe("secret files", () => {
  it("reads a token trimmed of the line break an editor adds", () => {
    expect(readSecretFile(read, "ok.token", "platform.adminTokenFile")).toBe("s3cr3t-token");
  });

  it("refuses a CR or LF inside the token at load, naming the setting, the file and the byte offset, never the token", () => {
    for (const [file, offset, code] of [
      ["crlf.token", 6, "0d"],
      ["lf.token", 7, "0a"],
    ] as const) {
      let err: unknown;
      try {
        readSecretFile(read, file, "server.bearerTokenFile");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const text = (err as ConfigError).format();
      expect(text).toContain("server.bearerTokenFile");
      expect(text).toContain(file);
      expect(text).toContain(`control character 0x${code} at byte offset ${offset}`);
      expect(text).not.toContain("s3cr3t");
    }
  });

  it("stops the exporter's start on an admin token file with a line break inside", async () => {
    const dir = mkdtempSync(join(tmpdir(), "secret-file-"));
    const path = join(dir, "admin.token");
    writeFileSync(path, "adm1n\n-token\n");
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--admin-token-file", path],
      env: { SANDBOX_API_URL: "http://127.0.0.1:9", SANDBOX_API_KEY: "k" },
    });
    const logger = createLogger("silent", "json");
    await expect(
      startExporter(config, { logger, clock: systemClock, manual: true }),
    ).rejects.toThrow(/platform\.adminTokenFile.*admin\.token.*byte offset 5/s);
  });
});
