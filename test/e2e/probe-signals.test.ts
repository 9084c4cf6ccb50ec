import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { PROBE_TAG_KEY } from "../../src/platform/types.js";
import { dataPlaneFlags, type Simulator, startSimulator } from "../../src/simulator/index.js";
import type { Clock } from "../../src/util/clock.js";
import { output } from "../helpers/child.js";
import { samples } from "../helpers/exporter.js";

const API_KEY = "signals-test-key";
/** Holds exec before its `start` event: longer than the test needs, shorter than the phase limit. */
const HOLD_EXEC_MS = 15_000;
const POLL_EVERY_MS = 25;
const WAIT_MS = 15_000;
const EXIT_WAIT_MS = 12_000;
const TEST_LIMIT = { timeout: 45_000 };

interface Cli {
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr). */
  log(): string;
}

let sim: Simulator | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (running(child)) child.kill("SIGKILL");
    await within(exited(child), 5_000, "killed exporter to exit").catch(() => undefined);
  }
  await sim?.close();
  sim = undefined;
}, 20_000);

/**
 * The real CLI as one process: `node --import tsx`, not the tsx binary, since that one runs the
 * CLI in a child of its own and a SIGKILL sent to it would not reach the exporter.
 */
function startCli(s: Simulator, instance: string): Cli {
  const template = s.state.templates[0]!.templateID;
  const args = [
    ...["--import", "tsx", "src/cli.ts", "--listen", "127.0.0.1:0", "--retries", "0"],
    ...["--probe", "--probe-instance", instance, "--probe-template", template],
    ...["--probe-schedule", "1s", ...dataPlaneFlags(s.dataPort)],
  ];
  const child = spawn(process.execPath, args, {
    // No inherited proxy or exporter variables: only what this test sets.
    env: {
      PATH: process.env.PATH,
      SANDBOX_API_URL: s.apiUrl,
      SANDBOX_API_KEY: API_KEY,
      SANDBOX_DOMAIN: s.domain,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return { child, log: output(child) };
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (!running(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
}

/** Settles like `promise`, or rejects once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Bounded polling: the first truthy value of `check`, or a failure naming `what` and the log. */
async function until<T>(what: string, check: () => T | undefined, cli?: Cli): Promise<T> {
  const deadline = performance.now() + WAIT_MS;
  for (;;) {
    const value = check();
    if (value) return value;
    if (cli && !running(cli.child))
      throw new Error(`exporter exited before ${what}:\n${cli.log()}`);
    if (performance.now() > deadline)
      throw new Error(`no ${what} within ${WAIT_MS} ms:\n${cli?.log() ?? ""}`);
    await new Promise((r) => setTimeout(r, POLL_EVERY_MS));
  }
}

/** Ids of the simulator's sandboxes tagged as probes of `instance`. */
function probeSandboxes(s: Simulator, instance: string): string[] {
  return [...s.state.sandboxes.values()]
    .filter((x) => x.metadata[PROBE_TAG_KEY] === instance)
    .map((x) => x.sandboxID);
}

/** The URL the exporter logs once it listens (after its start-up orphan sweep). */
function listeningUrl(cli: Cli): Promise<string> {
  return until(
    "'sandbox-exporter listening' log line",
    () => /"url":"(http:[^"]+)".*"msg":"sandbox-exporter listening"/.exec(cli.log())?.[1],
    cli,
  );
}

/** Waits until the probe of `instance` has created its sandbox and is held inside exec. */
async function probeHeldInExec(s: Simulator, instance: string, cli: Cli): Promise<string> {
  await listeningUrl(cli);
  const id = await until("probe sandbox", () => probeSandboxes(s, instance)[0], cli);
  await until("exec request", () => s.counters.get("POST /process.Process/Start") > 0, cli);
  return id;
}

describe("probe sandboxes across signals to the CLI process", () => {
  it("SIGTERM mid-probe: deletes the probe sandbox, then exits 0", TEST_LIMIT, async () => {
    const s = await startSimulator({ sandboxes: 5, apiKey: API_KEY });
    sim = s;
    s.faults.stream = { startDelayMs: HOLD_EXEC_MS };
    const cli = startCli(s, "e2e-term");
    const id = await probeHeldInExec(s, "e2e-term", cli);
    expect(s.counters.get("DELETE /sandboxes/{id}")).toBe(0);

    cli.child.kill("SIGTERM");
    const { code, signal } = await within(exited(cli.child), EXIT_WAIT_MS, "exit after SIGTERM");

    expect({ code, signal }, cli.log()).toEqual({ code: 0, signal: null });
    expect(s.state.sandbox(id)).toBeUndefined();
    expect(probeSandboxes(s, "e2e-term")).toEqual([]);
    expect(s.counters.get("DELETE /sandboxes/{id}")).toBe(1);
    expect(cli.log()).toContain('"signal":"SIGTERM"');
  });

  it("SIGKILL mid-probe leaves the sandbox; the next start deletes it", TEST_LIMIT, async () => {
    // The simulator's clock lags an hour, so the sandbox it stamps looks older than the total
    // probe timeout (60 s) to the next exporter, as after a restart that came much later.
    const lagging: Clock = { now: () => Date.now() - 3_600_000 };
    const s = await startSimulator({ sandboxes: 5, apiKey: API_KEY, clock: lagging });
    sim = s;
    s.faults.stream = { startDelayMs: HOLD_EXEC_MS };
    const first = startCli(s, "e2e-kill");
    const orphan = await probeHeldInExec(s, "e2e-kill", first);

    first.child.kill("SIGKILL");
    const killed = await within(exited(first.child), EXIT_WAIT_MS, "exit after SIGKILL");
    expect(killed.signal).toBe("SIGKILL");
    expect(probeSandboxes(s, "e2e-kill")).toEqual([orphan]);
    expect(s.counters.get("DELETE /sandboxes/{id}")).toBe(0);

    s.faults.clear();
    const second = startCli(s, "e2e-kill");
    const url = await listeningUrl(second);
    await until("orphan deleted", () => s.state.sandbox(orphan) === undefined, second);
    const metrics = samples(await (await fetch(`${url}/metrics`)).text());
    const template = s.state.templates[0]!.templateID;
    expect(
      metrics.get(`sandbox_probe_orphans_deleted_total{module="default",template="${template}"}`),
    ).toBe(1);

    second.child.kill("SIGTERM");
    const stopped = await within(exited(second.child), EXIT_WAIT_MS, "exit after SIGTERM");
    expect(stopped.code, second.log()).toBe(0);
    expect(probeSandboxes(s, "e2e-kill")).toEqual([]);
  });
});
