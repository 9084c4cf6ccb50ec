// The http step's request against a hostile service behind a loopback "proxy" (not the
// simulator): a body far over what the probe reads fails body_too_large, a reason the step lists,
// and reading stops at the cap; a body that trickles past the deadline after its headers came is
// reported as such, with durations as the rest of the exporter writes them.
import { createServer, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { DataClient } from "../../src/platform/data/data.js";
import { DEFAULT_MAX_PORT_BODY_BYTES } from "../../src/platform/data/port-request.js";
import { HttpSchema } from "../../src/probe/http-settings.js";
import type { ProbeControl, ProbeRun } from "../../src/probe/phase.js";
import { failureReason } from "../../src/probe/probe-error.js";
import { httpRequestPhase } from "../../src/probe/steps/http/http.js";
import { httpStep } from "../../src/probe/steps/http/http-step.js";
import { listenLoopback } from "../helpers/loopback.js";

const NONCE = "0123456789abcdef";
const CHUNK = Buffer.alloc(64 * 1024, "x");
/** The most a hostile server here ever writes: far below 5 GB, far above the probe's cap. */
const MAX_WRITTEN = 64 * 1024 * 1024;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** What the service did with one answer: bytes written, and whether the client hung up. */
interface Served {
  written: number;
  closed: Promise<void>;
}

/** A loopback server that answers every request with `answer`; resolves each answer's record. */
async function service(answer: (res: ServerResponse, served: Served) => void): Promise<{
  port: number;
  served: Served[];
}> {
  const served: Served[] = [];
  const server = createServer((_req, res) => {
    const one: Served = {
      written: 0,
      closed: new Promise((resolve) => res.on("close", () => resolve())),
    };
    served.push(one);
    answer(res, one);
  });
  const l = await listenLoopback(server);
  closers.push(l.close);
  return { port: l.port, served };
}

/** Writes 64 KiB chunks as fast as the client reads them, up to `max` bytes or a hang-up. */
function stream(res: ServerResponse, served: Served, max: number): void {
  const more = (): void => {
    while (served.written < max && !res.destroyed) {
      served.written += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once("drain", more);
    }
  };
  more();
}

/** A run of the http step whose sandbox's port 8000 is `port` on loopback. */
function runOn(port: number): ProbeRun {
  const data = new DataClient({
    sandboxDomain: "sandbox.invalid",
    proxyScheme: "http",
    proxyNodeIp: "127.0.0.1",
    proxyPortHttp: port,
    agentPort: 49983,
    timeoutMs: 5_000,
  });
  closers.push(() => data.close());
  return {
    control: {} as ProbeControl,
    data,
    settings: {
      template: "t",
      command: "echo {nonce}",
      filePath: "/tmp/f",
      metadata: {},
      sandboxTtlS: 60,
      steps: ["http"],
      lifecycleRounds: 1,
      http: HttpSchema.parse({}),
    },
    nonce: NONCE,
    monotonic: () => performance.now(),
    sleep: async () => {},
    sandbox: { id: "s1" },
    stream: { points: {}, keepalives: 0 },
  };
}

/** The phase's failure as its reason and message. */
async function failure(run: ProbeRun, budgetMs: number): Promise<[string, string]> {
  const signal = new AbortController().signal;
  try {
    await httpRequestPhase(run, signal, budgetMs);
  } catch (err) {
    return [failureReason(err, signal), (err as Error).message];
  }
  return ["passed", ""];
}

describe("the http step's answer", () => {
  it("fails body_too_large, unread, when it announces 5 GB", async () => {
    const s = await service((res, served) => {
      res.writeHead(200, { "content-length": String(5e9) });
      stream(res, served, MAX_WRITTEN);
    });
    const [reason, message] = await failure(runOn(s.port), 5_000);
    expect(reason).toBe("body_too_large");
    expect(httpStep.reasons).toContain(reason);
    expect(message).toContain("announced 5000000000 bytes");
    // The client hung up: the service's writes stopped at what the socket buffers took (about
    // 4 MB on loopback), far short of the 64 MB it had to give.
    await s.served[0]?.closed;
    expect(s.served[0]?.written).toBeLessThan(MAX_WRITTEN / 4);
  });

  it("fails body_too_large and stops reading at the cap when an endless one streams", async () => {
    const s = await service((res, served) => {
      res.writeHead(200, { "content-type": "text/plain" });
      stream(res, served, MAX_WRITTEN);
    });
    const [reason, message] = await failure(runOn(s.port), 5_000);
    expect(reason).toBe("body_too_large");
    expect(message).toContain(`longer than ${DEFAULT_MAX_PORT_BODY_BYTES} bytes`);
    await s.served[0]?.closed;
    // The cap and what the socket buffers took, not the 64 MB the service had to give.
    expect(s.served[0]?.written).toBeLessThan(MAX_WRITTEN / 4);
  });

  it("says the body trickled past the deadline after its headers came, in rounded durations", async () => {
    const s = await service((res) => {
      res.writeHead(200, { "content-length": "1000" });
      res.write(NONCE);
      // A byte every 20 ms: 1000 bytes would take 20 s.
      const drip = setInterval(() => res.write("x"), 20);
      res.on("close", () => clearInterval(drip));
    });
    // 899.6 ms, said as 900ms; the headers come well within it on a loaded machine too.
    const [reason, message] = await failure(runOn(s.port), 899.6);
    expect(reason).toBe("timeout");
    expect(message).toMatch(
      /^GET :8000\/sandbox-exporter-probe\.txt: body not complete within 900ms; headers arrived after \d{1,3}ms$/,
    );
  });
});
