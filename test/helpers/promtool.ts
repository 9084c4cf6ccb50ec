// The one `promtool check metrics` of the suites: only integration tests (the SLOW list of
// vitest.config.ts) import it; test/layout.test.ts keeps it that way.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Where the Debian package puts promtool (on PATH; it may still be installing when a suite starts). */
export const PROMTOOL = "/usr/bin/promtool";
const PROMTOOL_WAIT_TRIES = 120;
const PROMTOOL_WAIT_EVERY_MS = 500;
/** Bodies of a big fleet run to megabytes; spawnSync's default buffer is 1 MB. */
const MAX_BUFFER = 64 * 1024 * 1024;
const MAX_OUTPUT = 4_000;

/** Waits (bounded: about a minute) for promtool to exist; false when it never showed up. */
export async function promtoolReady(): Promise<boolean> {
  for (let i = 0; i < PROMTOOL_WAIT_TRIES; i++) {
    if (existsSync(PROMTOOL)) return true;
    await new Promise((r) => setTimeout(r, PROMTOOL_WAIT_EVERY_MS));
  }
  return existsSync(PROMTOOL);
}

/** `promtool check metrics` of `text`: its exit status and what it printed (cut to 4,000 chars). */
export function promtool(text: string): { status: number | null; output: string } {
  const r = spawnSync(PROMTOOL, ["check", "metrics"], {
    input: text,
    encoding: "utf8",
    maxBuffer: MAX_BUFFER,
  });
  if (r.error) throw r.error;
  return { status: r.status, output: `${r.stdout}${r.stderr}`.slice(0, MAX_OUTPUT) };
}
