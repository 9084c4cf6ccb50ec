import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, REDACT_PATHS } from "../../src/util/logger.js";
import { SECRET_FIELD_NAMES, Secrets } from "../../src/util/secrets.js";

const KEY = "sk-live-0123456789abcdef";

function capture(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { stream, lines };
}

describe("createLogger with secrets", () => {
  it("scrubs a secret from the message, from nested fields and in its encoded forms", () => {
    const { stream, lines } = capture();
    const log = createLogger("info", "json", stream, new Secrets([KEY]));
    log.info(`upstream says x-api-key=${KEY}`);
    log.warn(
      { collector: "nodes", error: { message: `got "${KEY}"`, url: encodeURIComponent(KEY) } },
      "failed",
    );
    log.info({ list: [KEY, { deep: { deeper: KEY } }] }, "list");
    expect(lines).toHaveLength(3);
    for (const l of lines) {
      expect(l).not.toContain(KEY);
      expect(l).toContain("[REDACTED]");
      expect(() => JSON.parse(l)).not.toThrow();
    }
    expect(JSON.parse(lines[1] as string).collector).toBe("nodes");
  });

  it("still logs a line whose fields cannot be serialised as JSON", () => {
    const { stream, lines } = capture();
    const log = createLogger("info", "json", stream, new Secrets([KEY]));
    const circular: Record<string, unknown> = { a: 1 };
    circular.self = circular;
    log.info({ circular }, `message with ${KEY}`);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(KEY);
  });
});

describe("createLogger errors", () => {
  it("gives an error to the err serializer, keeping its code, with secrets scrubbed from message and stack", () => {
    const { stream, lines } = capture();
    const log = createLogger("info", "json", stream, new Secrets([KEY]));
    const err = Object.assign(new Error(`refused key ${KEY}`), { code: "ERR_PLATFORM_HTTP" });
    log.child({ component: "poll" }).error({ err }, "poll cycle failed");
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] as string) as {
      component: string;
      err: { type: string; message: string; stack: string; code: string };
    };
    expect(lines[0]).not.toContain(KEY);
    expect(line.component).toBe("poll");
    expect(line.err).toMatchObject({ type: "Error", code: "ERR_PLATFORM_HTTP" });
    expect(line.err.message).toBe("refused key [REDACTED]");
    expect(line.err.stack).toContain("refused key [REDACTED]");
  });
});

describe("createLogger redaction", () => {
  it("redacts every secret field name of the secrets rule, up to two levels down", () => {
    const { stream, lines } = capture();
    const log = createLogger("info", "json", stream);
    const fields = Object.fromEntries(SECRET_FIELD_NAMES.map((n) => [n, `v-${n}`]));
    log.info({ ...fields, headers: { ...fields }, req: { headers: { ...fields } } }, "m");
    const line = lines[0] as string;
    for (const name of SECRET_FIELD_NAMES) expect(line, name).not.toContain(`v-${name}`);
    expect(JSON.parse(line).headers["x-api-key"]).toBe("***");
  });

  it("takes its paths from the secrets rule, and only those", () => {
    expect(REDACT_PATHS).toHaveLength(SECRET_FIELD_NAMES.length * 3);
    expect(REDACT_PATHS).toContain("*.*.apiKey");
    expect(REDACT_PATHS).toContain('*["x-api-key"]');
    const { stream, lines } = capture();
    createLogger("info", "json", stream).info({ apiKeyFile: "/run/key", authStyle: "bearer" }, "m");
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      apiKeyFile: "/run/key",
      authStyle: "bearer",
    });
  });
});
