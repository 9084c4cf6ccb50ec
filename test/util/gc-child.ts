// Run by deadline-gc.test.ts as `node --expose-gc --import tsx`: one deadline-bound wait on a
// source that never answers, with a full GC every 50 ms. Prints one line `RESULT <json>` and exits.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DataClient } from "../../src/platform/data/data.js";
import type { ProbeControl, ProbeData } from "../../src/probe/phase.js";
import { runProbe } from "../../src/probe/runner.js";
import { systemClock } from "../../src/util/clock.js";

const GC_EVERY_MS = 50;
/** The child gives up on its own after this, whatever happens (the test's bound is shorter). */
const CHILD_LIMIT_MS = 30_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");
const collect = setInterval(gc, GC_EVERY_MS);
setTimeout(() => process.exit(3), CHILD_LIMIT_MS).unref();
const began = performance.now();

function done(value: unknown): never {
  clearInterval(collect);
  const ms = Math.round(performance.now() - began);
  process.stdout.write(`RESULT ${JSON.stringify({ ms, value })}\n`);
  process.exit(0);
}

/** A probe whose create never answers: only the 300 ms create phase limit can end it. */
async function phase(): Promise<void> {
  const never = () => new Promise<never>(() => undefined);
  const control = {
    createSandbox: never,
    getSandbox: never,
    deleteSandbox: never,
    listSandboxes: never,
    pauseSandbox: never,
    resumeSandbox: never,
  } as unknown as ProbeControl;
  const result = await runProbe(
    {
      control,
      data: {} as ProbeData,
      clock: systemClock,
      monotonic: () => performance.now(),
      nonce: () => "n",
    },
    {
      template: "t",
      command: "echo {nonce}",
      filePath: "/tmp/x",
      metadata: {},
      sandboxTtlS: 60,
      steps: [],
      lifecycleRounds: 1,
    },
    // The total (60 s) is far past the test's bound: only the phase limit can end create in time.
    {
      phaseTimeoutMs: 60_000,
      phaseTimeouts: { create: 300, terminate: 300 },
      totalTimeoutMs: 60_000,
    },
    new AbortController().signal,
  );
  done(result.failures);
}

/** An agent that opens the exec stream and sends keepalives, never an end: only the call's limit ends it. */
async function stream(): Promise<void> {
  const keepalive = Buffer.from(JSON.stringify({ event: { keepalive: {} } }));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(keepalive.length, 1);
  const frame = Buffer.concat([head, keepalive]);
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/connect+json" });
    const tick = setInterval(() => res.write(frame), 100);
    res.on("close", () => clearInterval(tick));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const data = new DataClient({
    sandboxDomain: "sandbox.test",
    proxyScheme: "http",
    proxyNodeIp: "127.0.0.1",
    proxyPortHttp: (server.address() as AddressInfo).port,
    agentPort: 49_983,
    timeoutMs: 60_000,
  });
  // A caller signal that never aborts, so the limit is combined with it (the AbortSignal.any path).
  const caller = new AbortController();
  const events = data.startProcess(
    { id: "sb1" },
    { cmd: "/bin/true", args: [] },
    { signal: caller.signal, deadlineMs: 200 },
  );
  try {
    for await (const _ of events) {
      // Keepalives only; the limit (200 ms + 1 s grace) must end the stream.
    }
    done({ ended: "without error" });
  } catch (err) {
    done({ code: (err as { code?: unknown }).code });
  }
}

const mode = process.argv[2];
if (mode === "phase") void phase();
else if (mode === "stream") void stream();
else throw new Error(`unknown mode ${mode}`);
