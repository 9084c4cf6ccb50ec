// Child processes in tests: what they print, and bounded waits for a line to appear.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { expect } from "vitest";

/** Collects everything `child` writes to stdout and stderr; the function returns it so far. */
export function output(child: ChildProcess): () => string {
  let out = "";
  const add = (d: Buffer) => {
    out += d.toString();
  };
  child.stdout?.on("data", add);
  child.stderr?.on("data", add);
  return () => out;
}

/** Polls `text` every 50 ms until `done` holds or `tries` polls ran out; the text then. */
export async function waitForOutput(
  text: () => string,
  done: (out: string) => boolean,
  tries = 200,
): Promise<string> {
  for (let i = 0; i < tries && !done(text()); i++) await new Promise((r) => setTimeout(r, 50));
  return text();
}

/** The exporter's listener URL, from the first poll cycle's log line (bounded wait). */
export async function listenerUrl(text: () => string): Promise<string | undefined> {
  const out = await waitForOutput(text, (t) => t.includes("poll cycle done"));
  return /"url":"(http:[^"]+)"/.exec(out)?.[1];
}

/**
 * Checks an exporter child end to end: its first cycle's URL serves /metrics with the platform up,
 * and SIGTERM then ends it with exit code 0. Returns what /metrics said.
 */
export async function scrapeThenTerminate(child: ChildProcess, out: () => string): Promise<string> {
  const url = await listenerUrl(out);
  expect(url, out()).toBeDefined();
  const text = await (await fetch(`${url}/metrics`)).text();
  expect(text).toContain("sandbox_platform_up 1");
  child.kill("SIGTERM");
  const [code] = await once(child, "exit");
  expect(code, out()).toBe(0);
  return text;
}
