import { describe, expect, it } from "vitest";
import { isSecretKey, REDACTED, SECRET_FIELD_NAMES, Secrets } from "../../src/util/secrets.js";

const KEY = "k-live/9f+Q=key&more";

describe("Secrets.scrub", () => {
  it("replaces every occurrence of a secret", () => {
    const s = new Secrets([KEY]);
    expect(s.scrub(`a ${KEY} b ${KEY}${KEY}`)).toBe(`a ${REDACTED} b ${REDACTED}${REDACTED}`);
  });

  it("replaces its URL-encoded, JSON-escaped and base64 forms", () => {
    const key = 'se"cr/et+ \\1';
    const s = new Secrets([key]);
    const forms = [
      encodeURIComponent(key),
      encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
      JSON.stringify(key).slice(1, -1),
      Buffer.from(key).toString("base64"),
      Buffer.from(key).toString("base64url"),
    ];
    for (const form of forms) {
      expect(form).not.toBe(key);
      const out = s.scrub(`x=${form};`);
      expect(out, form).toContain(REDACTED);
      expect(out, form).not.toContain(form.replace(/=+$/, ""));
    }
    expect(s.scrub(JSON.stringify({ echo: key }))).toBe(`{"echo":"${REDACTED}"}`);
  });

  it("replaces the longer of two secrets where one contains the other", () => {
    const s = new Secrets(["abcd", "abcdefgh"]);
    expect(s.scrub("abcdefgh abcd")).toBe(`${REDACTED} ${REDACTED}`);
  });

  it("ignores empty and short values, so scrubbing never mangles ordinary text", () => {
    const s = new Secrets(["", "abc", undefined]);
    s.add("ok");
    s.addTransient("id");
    const text = "abc ok id: the quick brown fox...";
    expect(s.scrub(text)).toBe(text);
  });

  it("replaces the head of a secret that an excerpt cut, and only at the cut", () => {
    const s = new Secrets([KEY]);
    expect(s.scrub(`got "upstream ${KEY.slice(0, 9)}..."`)).toBe(`got "upstream ${REDACTED}..."`);
    expect(s.scrub(`echo ${KEY.slice(0, 5)}…`)).toBe(`echo ${REDACTED}…`);
    // Three characters are not enough to tell a secret from a word.
    expect(s.scrub(`echo ${KEY.slice(0, 3)}...`)).toBe(`echo ${KEY.slice(0, 3)}...`);
    expect(s.scrub(`${KEY.slice(0, 9)} and more`)).toBe(`${KEY.slice(0, 9)} and more`);
  });

  it("keeps the last 256 run-time secrets and every permanent one", () => {
    const s = new Secrets(["permanent-key"]);
    const token = (i: number) => `token-${String(i).padStart(4, "0")}`;
    for (let i = 0; i < 300; i++) s.addTransient(token(i));
    // Seen again: no longer the oldest.
    s.addTransient(token(44));
    s.addTransient(token(300));
    expect(s.scrub(token(44))).toBe(REDACTED);
    expect(s.scrub(token(45))).toBe(token(45));
    expect(s.scrub(token(46))).toBe(REDACTED);
    expect(s.scrub(token(300))).toBe(REDACTED);
    expect(s.scrub("permanent-key")).toBe(REDACTED);
  });

  it("scrubs a value added after the first scrub", () => {
    const s = new Secrets();
    expect(s.scrub("tok-late")).toBe("tok-late");
    s.addTransient("tok-late");
    expect(s.scrub("tok-late")).toBe(REDACTED);
  });
});

describe("Secrets.scrubError", () => {
  it("scrubs message, stack, string properties, nested objects, the cause chain and errors", () => {
    const s = new Secrets([KEY]);
    const root = new Error(`socket to https://u:${KEY}@host failed`);
    const inner = Object.assign(new Error(`inner ${KEY}`), { detail: { header: KEY } });
    const cause = new AggregateError([inner], `all failed for ${KEY}`, { cause: root });
    const err = Object.assign(new Error(`outer ${KEY}`, { cause }), {
      bodyExcerpt: `echo ${KEY}`,
      list: [`a ${KEY}`],
    });
    expect(s.scrubError(err)).toBe(err);
    const texts = [
      err.message,
      String(err.stack),
      err.bodyExcerpt,
      err.list[0],
      cause.message,
      String(cause.stack),
      root.message,
      String(root.stack),
      inner.message,
      inner.detail.header,
      JSON.stringify(err),
    ];
    for (const t of texts) expect(t).not.toContain(KEY);
    expect(err.message).toBe(`outer ${REDACTED}`);
    expect(inner.detail.header).toBe(REDACTED);
  });

  it("leaves frozen objects and buffers alone without throwing", () => {
    const s = new Secrets([KEY]);
    const frozen = Object.freeze({ text: KEY });
    const bytes = Buffer.from(KEY);
    const err = Object.assign(new Error("x"), { frozen, bytes });
    expect(() => s.scrubError(err)).not.toThrow();
    expect(bytes.toString()).toBe(KEY);
    expect(s.scrubError("not an error")).toBe("not an error");
  });
});

describe("isSecretKey", () => {
  it.each([
    "apiKey",
    "api_key",
    "APIKey",
    "X-API-Key",
    "apikey",
    "accessToken",
    "envd_access_token",
    "join_token",
    "secretRef",
    "client_secret",
    "password",
    "db_passwd",
    "auth",
    "basicAuthUsers",
    "Authorization",
    "Set-Cookie",
    "credentials",
    "privateKeyPem",
    "ssh_key_id",
  ])("%s holds a secret", (name) => {
    expect(isSecretKey(name)).toBe(true);
  });

  it.each([
    // Where a secret is, or how it is sent: not the secret itself.
    "apiKeyFile",
    "bearerTokenFile",
    "tls_key_file",
    "tokenPath",
    "authHeader",
    "authStyle",
    // Words that only contain a secret word.
    "monkey",
    "keyboard_layout",
    "tokenizer",
    "cpu_count",
    "",
  ])("%j does not", (name) => {
    expect(isSecretKey(name)).toBe(false);
  });

  it("calls every field name the logger redacts secret", () => {
    for (const name of SECRET_FIELD_NAMES) expect(isSecretKey(name), name).toBe(true);
  });
});
