// The pause, resume and terminate calls on the wire, against a small server written from the
// platform contract and E2B's OpenAPI, not the simulator: paths, methods and bodies are pinned here.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import type { ControlClient } from "../../src/platform/control/control.js";
import { createPhase } from "../../src/probe/create.js";
import type { PhaseFn, ProbeData, ProbeRun } from "../../src/probe/phase.js";
import { failureReason } from "../../src/probe/probe-error.js";
import { pausePhase } from "../../src/probe/steps/lifecycle/pause.js";
import { resumePhase } from "../../src/probe/steps/lifecycle/resume.js";
import { terminatePhase } from "../../src/probe/terminate.js";
import { testControl } from "../helpers/control.js";
import { listenLoopback } from "../helpers/loopback.js";

const TTL_S = 120;
const BUDGET_MS = 2_000;
const POLL_MS = 100;

interface Seen {
  method: string;
  path: string;
  contentType: string | undefined;
  body: string;
}

/** What the server answers: status and JSON (or raw text) body; no body for 204. */
type Answer = [number, unknown?];

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A loopback server answering each request with `answer`; it records every request it got. */
async function platform(answer: (req: Seen) => Answer): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const one: Seen = {
        method: req.method ?? "",
        path: req.url ?? "",
        contentType: req.headers["content-type"],
        body: Buffer.concat(chunks).toString("utf8"),
      };
      seen.push(one);
      const [status, body] = answer(one);
      if (body === undefined) return res.writeHead(status).end();
      const text = typeof body === "string" ? body : JSON.stringify(body);
      const type = typeof body === "string" ? "text/html" : "application/json";
      res.writeHead(status, { "content-type": type }).end(text);
    });
  });
  const listening = await listenLoopback(server);
  closers.push(listening.close);
  return { url: listening.url, seen };
}

function control(url: string, flavor?: "e2b"): ControlClient {
  const c = testControl({
    apiUrl: url,
    apiKey: "k",
    timeoutMs: 2_000,
    dispatcher: new Agent(),
    ...(flavor && { flavor, apiPrefix: "" }),
  });
  closers.push(() => c.close());
  return c;
}

/** A run whose sandbox `s1` exists; waits between reads move its clock instead of sleeping. */
function runOn(c: ControlClient): ProbeRun {
  let waited = 0;
  return {
    control: c,
    data: {} as ProbeData,
    settings: {
      template: "t",
      command: "echo {nonce}",
      filePath: "/tmp/p",
      metadata: {},
      sandboxTtlS: TTL_S,
      steps: ["exec", "file", "lifecycle"],
      lifecycleRounds: 2,
      statePollMs: POLL_MS,
    },
    nonce: "n",
    monotonic: () => performance.now() + waited,
    sleep: async (ms) => {
      waited += ms;
    },
    sandbox: { id: "s1", domain: "d1.example", accessToken: "tok" },
    sandboxId: "s1",
    stream: { points: {}, keepalives: 0 },
  };
}

/** Runs a phase; undefined when it passed, else its failure reason. */
async function phase(fn: PhaseFn, run: ProbeRun): Promise<string | undefined> {
  const signal = AbortSignal.timeout(BUDGET_MS);
  try {
    await fn(run, signal, BUDGET_MS);
    return undefined;
  } catch (err) {
    return failureReason(err, signal);
  }
}

const calls = (seen: Seen[]) => seen.map((s) => `${s.method} ${s.path}`);

/** Answers reads with `states` in turn (the last one repeating), and everything else with 204. */
function stateful(states: string[], resume: Answer = [201, { sandboxID: "s1" }]) {
  let read = 0;
  return (req: Seen): Answer => {
    if (req.method === "GET")
      return [200, { sandboxID: "s1", state: states[Math.min(read++, states.length - 1)] }];
    if (req.path.endsWith("/resume") || req.path.endsWith("/connect")) return resume;
    return [204];
  };
}

describe("the lifecycle on this platform's management API", () => {
  it("pauses with POST .../pause and no body, then reads the sandbox until it says paused", async () => {
    const { url, seen } = await platform(stateful(["running", "pausing", "PAUSED"]));
    expect(await phase(pausePhase, runOn(control(url)))).toBeUndefined();
    expect(calls(seen)).toEqual([
      "POST /sandboxapi/v1/sandboxes/s1/pause",
      "GET /sandboxapi/v1/sandboxes/s1",
      "GET /sandboxapi/v1/sandboxes/s1",
      "GET /sandboxapi/v1/sandboxes/s1",
    ]);
    expect(seen[0]?.body).toBe("");
  });

  it("takes the states configured as paused and running, in any case", async () => {
    const { url } = await platform(stateful(["paused", "Hibernated"]));
    const run = runOn(control(url));
    run.settings.states = { paused: ["hibernated"], running: ["Awake"] };
    expect(await phase(pausePhase, run)).toBeUndefined();
    const awake = await platform(stateful(["AWAKE"]));
    const resumed = runOn(control(awake.url));
    resumed.settings.states = { paused: ["hibernated"], running: ["Awake"] };
    expect(await phase(resumePhase, resumed)).toBeUndefined();
  });

  it("resumes with POST .../resume and the time to live as JSON, then reads until running", async () => {
    const { url, seen } = await platform(stateful(["paused", "running"]));
    const run = runOn(control(url));
    expect(await phase(resumePhase, run)).toBeUndefined();
    expect(calls(seen)).toEqual([
      "POST /sandboxapi/v1/sandboxes/s1/resume",
      "GET /sandboxapi/v1/sandboxes/s1",
      "GET /sandboxapi/v1/sandboxes/s1",
    ]);
    expect(seen[0]?.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({ timeout: TTL_S });
    // The answer named no domain: the sandbox stays where it was, with its token.
    expect(run.sandbox).toEqual({ id: "s1", domain: "d1.example", accessToken: "tok" });
  });

  it("takes the domain a resume answers with for later data calls", async () => {
    const { url } = await platform(
      stateful(["running"], [201, { sandboxID: "s1", domain: "d2.example", state: "running" }]),
    );
    const run = runOn(control(url));
    expect(await phase(resumePhase, run)).toBeUndefined();
    expect(run.sandbox).toEqual({ id: "s1", domain: "d2.example", accessToken: "tok" });
  });

  it("deletes a paused sandbox with DELETE and confirms it gone with a 404", async () => {
    let deleted = false;
    const { url, seen } = await platform((req) => {
      if (req.method === "DELETE") {
        deleted = true;
        return [204];
      }
      return deleted ? [404, { code: 404, message: "not found" }] : [200, { state: "paused" }];
    });
    const run = runOn(control(url));
    expect(await phase(terminatePhase, run)).toBeUndefined();
    expect(calls(seen)).toEqual([
      "DELETE /sandboxapi/v1/sandboxes/s1",
      "GET /sandboxapi/v1/sandboxes/s1",
    ]);
    expect(run.sandbox).toBeUndefined();
  });

  it("reads a 404 after pause as not_found, not as a status", async () => {
    const { url } = await platform((req) =>
      req.method === "POST" ? [204] : [404, { code: 404, message: "sandbox not found" }],
    );
    expect(await phase(pausePhase, runOn(control(url)))).toBe("not_found");
    const gone = await platform(() => [404, { code: 404, message: "sandbox not found" }]);
    expect(await phase(resumePhase, runOn(control(gone.url)))).toBe("not_found");
  });

  it("reports a refused pause, a failed resume and an HTML resume answer by what they are", async () => {
    const refused = await platform(() => [409, { code: 409, message: "not running" }]);
    expect(await phase(pausePhase, runOn(control(refused.url)))).toBe("http_status");
    const failed = await platform(stateful(["paused"], [500, { code: 500, message: "boom" }]));
    expect(await phase(resumePhase, runOn(control(failed.url)))).toBe("http_status");
    expect(calls(failed.seen)).toEqual(["POST /sandboxapi/v1/sandboxes/s1/resume"]);
    const html = await platform(stateful(["running"], [201, "<html>resumed</html>"]));
    expect(await phase(resumePhase, runOn(control(html.url)))).toBe("bad_body");
  });

  it("gives up with not_paused and not_resumed on states that never come, or cannot", async () => {
    const stuck = await platform(stateful(["running"]));
    expect(await phase(pausePhase, runOn(control(stuck.url)))).toBe("not_paused");
    // One read every 100 ms of a 2 s budget, and none whose wait would cross its end: at most 20
    // (a busy machine answers slower, so fewer reads fit; it keeps reading until the budget ends).
    const reads = calls(stuck.seen).filter((c) => c.startsWith("GET")).length;
    expect(reads).toBeLessThanOrEqual(BUDGET_MS / POLL_MS);
    expect(reads).toBeGreaterThan(BUDGET_MS / POLL_MS / 4);
    const killed = await platform(stateful(["paused", "killed"]));
    expect(await phase(resumePhase, runOn(control(killed.url)))).toBe("not_resumed");
    // A sandbox reported killed is not waited for.
    expect(killed.seen).toHaveLength(3);
  });
});

describe("the lifecycle on E2B's API", () => {
  it("pauses with POST /sandboxes/{id}/pause and resumes with POST /sandboxes/{id}/connect", async () => {
    const { url, seen } = await platform(stateful(["paused"]));
    const run = runOn(control(url, "e2b"));
    expect(await phase(pausePhase, run)).toBeUndefined();
    const resumed = await platform(
      stateful(["running"], [201, { sandboxID: "s1", templateID: "t", envdVersion: "0.2.0" }]),
    );
    expect(await phase(resumePhase, runOn(control(resumed.url, "e2b")))).toBeUndefined();
    expect(calls([...seen, ...resumed.seen])).toEqual([
      "POST /sandboxes/s1/pause",
      "GET /sandboxes/s1",
      "POST /sandboxes/s1/connect",
      "GET /sandboxes/s1",
    ]);
    // ConnectSandbox: `timeout` (seconds) is required.
    expect(JSON.parse(resumed.seen[0]?.body ?? "")).toEqual({ timeout: TTL_S });
  });

  it("takes the newest agent token and envd version a connect answers with for later data calls", async () => {
    const answer = { sandboxID: "s1", envdVersion: "0.6.13", envdAccessToken: "tok-2" };
    const { url } = await platform(stateful(["running"], [201, answer]));
    const run = runOn(control(url, "e2b"));
    run.sandbox = { ...run.sandbox!, envdVersion: "0.3.7" };
    expect(await phase(resumePhase, run)).toBeUndefined();
    expect(run.sandbox).toEqual({
      id: "s1",
      domain: "d1.example",
      accessToken: "tok-2",
      envdVersion: "0.6.13",
    });
  });

  it("creates a secured sandbox, as E2B's SDK does, and keeps its token and envd version", async () => {
    const created = {
      sandboxID: "s9",
      templateID: "t",
      envdVersion: "0.3.7",
      envdAccessToken: "tok-9",
    };
    const { url, seen } = await platform(() => [201, created]);
    const run = runOn(control(url, "e2b"));
    delete run.sandbox;
    expect(await phase(createPhase, run)).toBeUndefined();
    expect(calls(seen)).toEqual(["POST /sandboxes"]);
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({
      templateID: "t",
      timeout: TTL_S,
      metadata: {},
      secure: true,
    });
    expect(run.sandbox).toEqual({ id: "s9", accessToken: "tok-9", envdVersion: "0.3.7" });
  });

  it("takes connect's 200 (already running) as resumed", async () => {
    const { url } = await platform(stateful(["running"], [200, { sandboxID: "s1" }]));
    expect(await phase(resumePhase, runOn(control(url, "e2b")))).toBeUndefined();
  });
});
