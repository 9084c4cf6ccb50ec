// Secrets kept in files (admin token, listener bearer token, webhook header value): read once,
// trimmed, and refused at load when a line break or another control character sits inside.
import { ConfigError } from "./errors.js";

/** Index of the first control character of `s` (none may go into an HTTP header), or -1. */
export function controlCharacterAt(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return i;
  }
  return -1;
}

/**
 * The trimmed content of the file at `file`, which `setting` names. A CR, LF or other control
 * character inside it would make every request carrying it fail later: refused now, naming the
 * setting, the file and the byte offset, never the content.
 */
export function readSecretFile(
  read: (path: string) => string,
  file: string,
  setting: string,
): string {
  const raw = read(file);
  const value = raw.trim();
  const at = controlCharacterAt(value);
  if (at >= 0) {
    const offset = Buffer.byteLength(raw.slice(0, raw.indexOf(value) + at), "utf8");
    const code = value.charCodeAt(at).toString(16).padStart(2, "0");
    throw new ConfigError([
      {
        path: setting,
        source: "file",
        origin: file,
        expected: "one line: a value with no line break or other control character inside",
        received: `control character 0x${code} at byte offset ${offset}`,
      },
    ]);
  }
  return value;
}
