// Deadlines under a forced GC: a child process (--expose-gc) collects every 50 ms while a probe
// phase and an exec stream wait on sources that never answer. AbortSignal.any holds a timeout
// signal weakly on Node 20, so a deadline built that way is collected and never fires.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { output, waitForOutput } from "../helpers/child.js";

/** Polls of 50 ms: the child has 8 s to print its result, far beyond the deadlines it waits on. */
const TRIES = 160;

async function inChild(mode: string): Promise<{ ms: number; value: unknown } | undefined> {
  const child = spawn(
    process.execPath,
    ["--expose-gc", "--import", "tsx", "test/util/gc-child.ts", mode],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const out = output(child);
  try {
    const text = await waitForOutput(out, (t) => t.includes("RESULT "), TRIES);
    const line = /^RESULT (.+)$/m.exec(text)?.[1];
    return line === undefined ? undefined : (JSON.parse(line) as { ms: number; value: unknown });
  } finally {
    if (child.exitCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  }
}

describe("deadlines under a forced GC", () => {
  it("ends a probe phase at its limit while a GC runs every 50 ms", async () => {
    const r = await inChild("phase");
    expect(r, "the phase never timed out: its deadline was collected").toBeDefined();
    // Terminate (limit 300 ms too) waits on the create that never answered, and times out as well.
    expect(r?.value).toEqual([
      expect.objectContaining({ phase: "create", reason: "timeout" }),
      expect.objectContaining({ phase: "terminate", reason: "timeout" }),
    ]);
    expect(JSON.stringify(r?.value)).toContain("phase timeout of 300 ms");
  }, 20_000);

  it("ends an exec stream of endless keepalives at the call's limit while a GC runs", async () => {
    const r = await inChild("stream");
    expect(r, "the stream never timed out: its deadline was collected").toBeDefined();
    expect(r?.value).toEqual({ code: "ERR_PLATFORM_TIMEOUT" });
  }, 20_000);
});
