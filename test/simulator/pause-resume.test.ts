import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { createSandbox, eventKinds, output, parseFrames, runCommand } from "./helpers.js";

async function call(
  sim: Simulator,
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: unknown,
) {
  const res = await request(`${sim.managementUrl}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

/** Runs a script in the sandbox; its stdout and exit code (0 when the end event omits it). */
async function sh(sim: Simulator, id: string, script: string) {
  const res = await runCommand(sim, id, script);
  if (res.status !== 200) return { status: res.status, stdout: "", code: -1 };
  const frames = parseFrames(res.body);
  const end = frames.find((f) => eventKinds([f])[0] === "end")?.json as {
    event: { end: { exitCode?: number } };
  };
  return { status: 200, stdout: output(frames, "stdout"), code: end.event.end.exitCode ?? 0 };
}

const state = async (sim: Simulator, id: string) =>
  (await call(sim, "GET", `/sandboxes/${id}`)).json?.state as string | undefined;

describe("pause and resume keep a sandbox's files and processes", () => {
  const clock = new FakeClock(Date.parse("2025-06-01T12:00:00Z"));
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 0, clock });
  });
  afterEach(() => sim.faults.clear());
  afterAll(() => sim.close());

  /** A new sandbox with a file and a background process; its id and the process's pid. */
  async function prepared() {
    const id = (await createSandbox(sim)).sandboxID;
    expect((await sh(sim, id, "echo kept > /tmp/nonce")).code).toBe(0);
    const started = await sh(sim, id, "sleep 600 >/dev/null 2>&1 </dev/null & echo $!");
    const pid = Number(started.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    return { id, pid };
  }

  it("keeps both across pause and resume, answering E2B's 502 on the data plane while paused", async () => {
    const { id, pid } = await prepared();
    expect((await call(sim, "POST", `/sandboxes/${id}/pause`)).status).toBe(204);
    expect(await state(sim, id)).toBe("paused");
    expect((await runCommand(sim, id, "echo hi")).status).toBe(502);
    expect(await state(sim, id)).toBe("paused");
    expect((await call(sim, "POST", `/sandboxes/${id}/resume`, { timeout: 60 })).status).toBe(201);
    expect(await state(sim, id)).toBe("running");
    expect(await sh(sim, id, "cat /tmp/nonce")).toMatchObject({ stdout: "kept\n" });
    expect(await sh(sim, id, `kill -0 ${pid}`)).toMatchObject({ code: 0 });
    expect(sim.state.sandbox(id)!.resumes).toBe(1);
    await call(sim, "DELETE", `/sandboxes/${id}`);
  });

  it("deletes a paused sandbox without resuming it", async () => {
    const { id } = await prepared();
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect((await call(sim, "DELETE", `/sandboxes/${id}`)).status).toBe(204);
    expect((await call(sim, "GET", `/sandboxes/${id}`)).status).toBe(404);
    expect(sim.state.sandbox(id)).toBeUndefined();
  });

  it("loses the files or the processes on resume when told to", async () => {
    const { id, pid } = await prepared();
    sim.faults.lifecycle = { loseFilesOnResume: true };
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    await call(sim, "POST", `/sandboxes/${id}/resume`);
    expect(await sh(sim, id, "cat /tmp/nonce")).toMatchObject({ code: 1 });
    expect(await sh(sim, id, `kill -0 ${pid}`)).toMatchObject({ code: 0 });

    sim.faults.lifecycle = { loseProcessesOnResume: true };
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    await call(sim, "POST", `/sandboxes/${id}/resume`);
    expect(await sh(sim, id, `kill -0 ${pid}`)).toMatchObject({ code: 1 });
    await call(sim, "DELETE", `/sandboxes/${id}`);
  });

  it("fails the Nth resume and every later one with 500, leaving the sandbox paused", async () => {
    const { id } = await prepared();
    sim.faults.lifecycle = { failResumeFrom: 2 };
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect((await call(sim, "POST", `/sandboxes/${id}/resume`)).status).toBe(201);
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect((await call(sim, "POST", `/sandboxes/${id}/resume`)).status).toBe(500);
    expect((await call(sim, "POST", `/sandboxes/${id}/resume`)).status).toBe(500);
    expect(await state(sim, id)).toBe("paused");
    expect((await call(sim, "DELETE", `/sandboxes/${id}`)).status).toBe(204);
  });

  it("loses the sandbox at pause: 204, then 404 for every call about it", async () => {
    const { id } = await prepared();
    sim.faults.lifecycle = { notFoundAfterPause: true };
    expect((await call(sim, "POST", `/sandboxes/${id}/pause`)).status).toBe(204);
    expect((await call(sim, "GET", `/sandboxes/${id}`)).status).toBe(404);
    expect((await call(sim, "POST", `/sandboxes/${id}/resume`)).status).toBe(404);
    expect((await call(sim, "DELETE", `/sandboxes/${id}`)).status).toBe(404);
    expect((await runCommand(sim, id, "echo hi")).status).toBe(502);
  });

  it("reports the old state on reads until a slow pause or resume showed, on its clock", async () => {
    const { id } = await prepared();
    sim.faults.lifecycle = { pauseDelayMs: 1_000, resumeDelayMs: 500 };
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect(await state(sim, id)).toBe("running");
    clock.advance(999);
    expect(await state(sim, id)).toBe("running");
    clock.advance(1);
    expect(await state(sim, id)).toBe("paused");
    await call(sim, "POST", `/sandboxes/${id}/resume`);
    expect(await state(sim, id)).toBe("paused");
    clock.advance(500);
    expect(await state(sim, id)).toBe("running");
    await call(sim, "DELETE", `/sandboxes/${id}`);
  });

  it("answers a pause that never happens with 204", async () => {
    const { id } = await prepared();
    sim.faults.lifecycle = { stayRunningAfterPause: true };
    expect((await call(sim, "POST", `/sandboxes/${id}/pause`)).status).toBe(204);
    expect(await state(sim, id)).toBe("running");
    expect(await sh(sim, id, "echo still")).toMatchObject({ stdout: "still\n" });
    await call(sim, "DELETE", `/sandboxes/${id}`);
  });

  it("turns every lifecycle knob off on clear", () => {
    sim.faults.lifecycle = { failResumeFrom: 1, notFoundAfterPause: true };
    sim.faults.clear();
    expect(sim.faults.lifecycle).toEqual({});
  });
});

describe("E2B's connect", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 0, flavor: "e2b" });
  });
  afterEach(() => sim.faults.clear());
  afterAll(() => sim.close());

  it("resumes with files and processes kept, counts as a resume, and honours failResumeFrom", async () => {
    const id = (await createSandbox(sim)).sandboxID;
    const started = await sh(sim, id, "echo kept > f; sleep 600 > /dev/null 2>&1 & echo $!");
    const pid = started.stdout.trim();
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect((await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 })).status).toBe(201);
    expect(await sh(sim, id, `cat f && kill -0 ${pid}`)).toMatchObject({
      stdout: "kept\n",
      code: 0,
    });
    // Connecting to a running sandbox resumes nothing.
    expect((await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 })).status).toBe(200);
    expect(sim.state.sandbox(id)!.resumes).toBe(1);

    sim.faults.lifecycle = { failResumeFrom: 2 };
    await call(sim, "POST", `/sandboxes/${id}/pause`);
    expect((await call(sim, "POST", `/sandboxes/${id}/connect`, { timeout: 60 })).status).toBe(500);
    expect(await state(sim, id)).toBe("paused");
    expect((await call(sim, "DELETE", `/sandboxes/${id}`)).status).toBe(204);
  });
});
