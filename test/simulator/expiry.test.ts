import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { simulatorArgs } from "../../src/simulator/args.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import type { SimLifecycleEvent } from "../../src/simulator/state.js";
import { FakeClock } from "../../src/util/clock.js";
import { eventKinds, output, parseFrames, runCommand } from "./helpers.js";

const T0 = Date.parse("2026-03-01T10:00:00Z");

async function call(sim: Simulator, method: "GET" | "POST", path: string, body?: unknown) {
  const res = await request(`${sim.managementUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** Runs a script in the sandbox: the HTTP status, its stdout and exit code. */
async function sh(sim: Simulator, id: string, script: string) {
  const res = await runCommand(sim, id, script);
  if (res.status !== 200) return { status: res.status, stdout: "", code: -1 };
  const frames = parseFrames(res.body);
  const end = frames.find((f) => eventKinds([f])[0] === "end")?.json as {
    event: { end: { exitCode?: number } };
  };
  return { status: 200, stdout: output(frames, "stdout"), code: end.event.end.exitCode ?? 0 };
}

describe("sandboxes whose time to live passed (expireSandboxes)", () => {
  const clock = new FakeClock(T0);
  const events: SimLifecycleEvent[] = [];
  let sim: Simulator;
  let template: string;
  beforeAll(async () => {
    sim = await startSimulator({ flavor: "e2b", sandboxes: 0, clock });
    sim.state.onLifecycle((e) => events.push(e));
    template = sim.state.templates.find((t) => t.status === "ready")!.templateID;
  });
  afterEach(() => {
    sim.faults.clear();
    events.length = 0;
  });
  afterAll(() => sim.close());

  /** Creates a sandbox living `timeout` seconds with `extra` create fields; its id. */
  async function created(timeout: number, extra: object = {}): Promise<string> {
    const res = await call(sim, "POST", "/sandboxes", { templateID: template, timeout, ...extra });
    expect(res.status).toBe(201);
    return res.json.sandboxID as string;
  }

  const state = async (id: string) => {
    const res = await call(sim, "GET", `/sandboxes/${id}`);
    return res.status === 404 ? "gone" : (res.json.state as string);
  };

  it("pauses a sandbox created with autoPause at its timeout, keeping files and processes", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    const id = await created(10, { autoPause: true });
    expect((await sh(sim, id, "echo kept > /tmp/nonce")).code).toBe(0);
    const pid = Number(
      (await sh(sim, id, "sleep 600 >/dev/null 2>&1 </dev/null & echo $!")).stdout,
    );
    clock.advance(9_999);
    expect(await state(id)).toBe("running");
    clock.advance(1);
    expect(await state(id)).toBe("paused");
    expect(events.filter((e) => e.sandbox.sandboxID === id).map((e) => e.type)).toContain("paused");
    // A data-plane request finds it paused: E2B's proxy answers 502 for a paused sandbox.
    expect((await sh(sim, id, "echo hi")).status).toBe(502);
    // Connect resumes it and keeps auto-pause on: it pauses again at the new timeout.
    expect((await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 5 })).status).toBe(201);
    expect(await sh(sim, id, "cat /tmp/nonce")).toMatchObject({ stdout: "kept\n" });
    expect(await sh(sim, id, `kill -0 ${pid}`)).toMatchObject({ code: 0 });
    clock.advance(5_000);
    expect(await state(id)).toBe("paused");
    expect(sim.state.sandbox(id)!.autoPause).toBe(true);
  });

  it("takes E2B's SDK spelling lifecycle.onTimeout pause too", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    const bare = await created(1, { lifecycle: { onTimeout: "pause" } });
    const object = await created(1, { lifecycle: { onTimeout: { action: "pause" } } });
    clock.advance(1_000);
    expect([await state(bare), await state(object)]).toEqual(["paused", "paused"]);
  });

  it("kills a sandbox created without auto-pause, with reason timeout, at the next data-plane request", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    const id = await created(2, { autoPause: false });
    clock.advance(2_000);
    // The data plane applies the timeout too, before it routes the request.
    expect((await sh(sim, id, "echo hi")).status).toBe(502);
    expect(sim.state.sandbox(id)).toBeUndefined();
    const killed = events.find((e) => e.type === "killed" && e.sandbox.sandboxID === id);
    expect(killed?.killReason).toBe("timeout");
  });

  it("enforces no timeout unless switched on", async () => {
    const id = await created(1, { autoPause: true });
    clock.advance(60_000);
    expect(await state(id)).toBe("running");
  });

  it("kills instead of pausing with autoPauseKillsInstead", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    sim.faults.lifecycle.autoPauseKillsInstead = true;
    const id = await created(1, { autoPause: true });
    clock.advance(1_000);
    expect(await state(id)).toBe("gone");
    expect(events.find((e) => e.type === "killed")?.killReason).toBe("timeout");
  });

  it("loses the files written shortly before the auto-pause with autoPauseLosesFilesWrittenWithinMs (E2B#1104)", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    sim.faults.lifecycle.autoPauseLosesFilesWrittenWithinMs = 3_000;
    const id = await created(10, { autoPause: true });
    await sh(sim, id, "echo old > /tmp/old");
    clock.advance(8_000);
    await sh(sim, id, "echo new > /tmp/new");
    clock.advance(2_000);
    expect(await state(id)).toBe("paused");
    await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 });
    expect(await sh(sim, id, "cat /tmp/old")).toMatchObject({ stdout: "old\n" });
    expect((await sh(sim, id, "cat /tmp/new")).code).not.toBe(0);
  });

  it("brings back the first pause's files from the second resume on with filesFromFirstPauseFromResume (E2B#884)", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    sim.faults.lifecycle.filesFromFirstPauseFromResume = 2;
    const id = await created(1, { autoPause: true });
    await sh(sim, id, "echo one > /tmp/f");
    clock.advance(1_000);
    expect(await state(id)).toBe("paused");
    await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 1 });
    expect(await sh(sim, id, "cat /tmp/f")).toMatchObject({ stdout: "one\n" });
    await sh(sim, id, "echo two > /tmp/f");
    clock.advance(1_000);
    expect(await state(id)).toBe("paused");
    await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 });
    expect(await sh(sim, id, "cat /tmp/f")).toMatchObject({ stdout: "one\n" });
  });

  it("issues a new agent token on each connect of a paused sandbox with rotateTokenOnResume", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    sim.faults.lifecycle.rotateTokenOnResume = true;
    const first = await call(sim, "POST", "/sandboxes", {
      templateID: template,
      timeout: 1,
      autoPause: true,
      secure: true,
    });
    const id = first.json.sandboxID as string;
    clock.advance(1_000);
    const resumed = await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 });
    expect(resumed.json.envdAccessToken).toMatch(/^ea_/);
    expect(resumed.json.envdAccessToken).not.toBe(first.json.envdAccessToken);
  });
});

describe("auto-pause on this platform's API", () => {
  it("is not a field of its create: a sandbox asking for it is killed at its timeout", async () => {
    const clock = new FakeClock(T0);
    const sim = await startSimulator({ sandboxes: 0, clock });
    try {
      sim.faults.lifecycle.expireSandboxes = true;
      const template = sim.state.templates.find((t) => t.status === "ready")!.templateID;
      const res = await call(sim, "POST", "/sandboxes", { templateID: template, timeout: 1 });
      const id = res.json.sandboxID as string;
      const asked = await call(sim, "POST", "/sandboxes", {
        templateID: template,
        timeout: 1,
        autoPause: true,
      });
      clock.advance(1_000);
      expect((await call(sim, "GET", `/sandboxes/${id}`)).status).toBe(404);
      expect((await call(sim, "GET", `/sandboxes/${asked.json.sandboxID}`)).status).toBe(404);
    } finally {
      await sim.close();
    }
  });
});

describe("npm run simulator -- --flavor e2b", () => {
  /** The options main.ts starts the simulator with for `args`. */
  function optionsOf(args: string[]) {
    const parsed = simulatorArgs(args);
    if (parsed.help) throw new Error("not the usage");
    return parsed.options;
  }

  it("ends sandboxes at their timeout by default, as E2B does; --no-expiry and the other flavor keep them", () => {
    expect(optionsOf(["--flavor", "e2b"]).expireSandboxes).toBe(true);
    expect(optionsOf(["--flavor", "e2b", "--no-expiry"]).expireSandboxes).toBe(false);
    expect(optionsOf([]).expireSandboxes).toBe(false);
    expect(simulatorArgs(["--help"])).toEqual({ help: true });
  });

  for (const [args, ends] of [
    [["--flavor", "e2b"], true],
    [["--flavor", "e2b", "--no-expiry"], false],
  ] as const)
    it(`${ends ? "pauses an auto-pause sandbox and kills the others" : "keeps every sandbox"} at the timeout with ${args.join(" ")}`, async () => {
      const clock = new FakeClock(T0);
      const sim = await startSimulator({
        ...optionsOf([...args, "--sandboxes", "0", "--api-port", "0", "--data-port", "0"]),
        clock,
      });
      try {
        const template = sim.state.templates.find((t) => t.status === "ready")!.templateID;
        const create = async (extra: object) =>
          (await call(sim, "POST", "/sandboxes", { templateID: template, timeout: 5, ...extra }))
            .json.sandboxID as string;
        const state = async (id: string) => {
          const res = await call(sim, "GET", `/sandboxes/${id}`);
          return res.status === 404 ? "gone" : (res.json.state as string);
        };
        const paused = await create({ autoPause: true });
        const killed = await create({});
        clock.advance(4_999);
        expect([await state(paused), await state(killed)]).toEqual(["running", "running"]);
        clock.advance(1);
        expect([await state(paused), await state(killed)]).toEqual(
          ends ? ["paused", "gone"] : ["running", "running"],
        );
      } finally {
        await sim.close();
      }
    });
});
