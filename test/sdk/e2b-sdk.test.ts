// E2B's own JavaScript SDK (npm `e2b`, pinned 2.51.0) as the judge of the simulator's E2B mode: a
// client nobody here wrote drives every operation over loopback, with its own options only.
//
// Where the SDK and the vendored OpenAPI document (test/fixtures/e2b/openapi.yml) disagree, the
// SDK's requests (they reach production) and E2B's handler code decide:
// - create: SDK 2.51 posts to POST /v2/sandboxes (NewSandboxV2: always secured, no `secure`
//   field, 300 s default time to live), which the vendored document does not have.
// - connect: SDK 2.51 posts to POST /v2/sandboxes/{id}/connect with an optional body (E2B's
//   TestSandboxConnectV2: no field required, 300 s default, a zero timeout refused); the document
//   has only v1 connect, whose timeout is required.
// - list without a state: E2B's GetV2Sandboxes lists running and paused sandboxes (the SDK says
//   so too); the document does not say.
// - the data plane: the SDK sends every agent call to `sandboxUrl` with E2b-Sandbox-Id and
//   E2b-Sandbox-Port, which E2B's client proxy routes on when the Host is an IP, localhost or
//   `sandbox.{domain}` (infra packages/shared/pkg/proxy/host.go); the document has no data plane.
// - a paused or killed sandbox on the data plane: E2B's proxy answers 502 with its "sandbox not
//   found" JSON unless the sandbox was created with autoResume (client-proxy's catalogResolution);
//   the SDK turns the 502 into SandboxNotFoundError ("probably not running anymore") for a command,
//   TimeoutError for a file call, and `isRunning() === false` for its health check.
import {
  CommandExitError,
  FileNotFoundError,
  Sandbox,
  SandboxNotFoundError,
  TimeoutError,
} from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CURRENT_ENVD_VERSION,
  ENVD_VERSION_MIX,
  type Simulator,
} from "../../src/simulator/index.js";
import type { FakeClock } from "../../src/util/clock.js";
import { SDK_API_KEY, sdkOpts, startSdkSimulator, templateOn } from "./sdk-setup.js";

/** Upper bound on list pages walked by a test. */
const MAX_PAGES = 50;

describe("E2B SDK 2.51 against the simulator's E2B mode", () => {
  let sim: Simulator;
  let clock: FakeClock;

  beforeAll(async () => {
    ({ sim, clock } = await startSdkSimulator());
  });
  afterAll(async () => {
    await sim.close();
  });

  /** Every sandbox a list returns, walking its pages (bounded). */
  async function listAll(opts: Parameters<typeof Sandbox.list>[0] = {}) {
    const paginator = Sandbox.list({ ...sdkOpts(sim), ...opts });
    const items = [];
    for (let i = 0; paginator.hasNext && i < MAX_PAGES; i++)
      items.push(...(await paginator.nextItems()));
    expect(paginator.hasNext).toBe(false);
    return items;
  }

  async function create(version = CURRENT_ENVD_VERSION, metadata?: Record<string, string>) {
    return Sandbox.create(templateOn(sim, version), {
      ...sdkOpts(sim),
      ...(metadata && { metadata }),
    });
  }

  it("lists running and paused sandboxes without a state, each once, across pages", async () => {
    const items = await listAll({ limit: 7 });
    const visible = [...sim.state.sandboxes.values()].filter(
      (s) => s.state === "running" || s.state === "paused",
    );
    expect(items.length).toBe(visible.length);
    expect(new Set(items.map((s) => s.sandboxId))).toEqual(
      new Set(visible.map((s) => s.sandboxID)),
    );
    expect(items.some((s) => s.state === "paused")).toBe(true);
    expect(sim.counters.get("GET /v2/sandboxes")).toBeGreaterThan(1);
  });

  it("lists by state and by metadata", async () => {
    const paused = await listAll({ query: { state: ["paused"] }, limit: 5 });
    expect(paused.length).toBe(
      [...sim.state.sandboxes.values()].filter((s) => s.state === "paused").length,
    );
    expect(paused.every((s) => s.state === "paused")).toBe(true);
    const sbx = await create(CURRENT_ENVD_VERSION, { suite: "sdk-list" });
    const tagged = await listAll({ query: { metadata: { suite: "sdk-list" } } });
    expect(tagged.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
    expect(tagged[0]).toMatchObject({ state: "running", metadata: { suite: "sdk-list" } });
    await sbx.kill();
  });

  it("creates through POST /v2/sandboxes: secured, 300 s to live, on the current envd", async () => {
    const before = sim.counters.get("POST /v2/sandboxes");
    const sbx = await create();
    expect(sim.counters.get("POST /v2/sandboxes")).toBe(before + 1);
    const record = sim.state.sandbox(sbx.sandboxId);
    expect(record?.accessToken).toMatch(/^ea_/);
    expect(record?.endAt).toBe(clock.now() + 300_000);
    const info = await sbx.getInfo();
    expect(info).toMatchObject({
      sandboxId: sbx.sandboxId,
      templateId: templateOn(sim, CURRENT_ENVD_VERSION),
      state: "running",
      envdVersion: CURRENT_ENVD_VERSION,
    });
    await sbx.kill();
  });

  it("drives a sandbox created by v1 POST /sandboxes (which SDK 2.51 no longer calls)", async () => {
    // The SDK has no v1 create, so a plain request makes the sandbox and the SDK connects to it.
    const res = await fetch(`${sim.apiUrl}/sandboxes`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": SDK_API_KEY },
      body: JSON.stringify({ templateID: templateOn(sim, CURRENT_ENVD_VERSION), timeout: 60 }),
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { sandboxID: string; envdAccessToken: string };
    const sbx = await Sandbox.connect(created.sandboxID, sdkOpts(sim));
    expect((await sbx.commands.run("echo v1")).stdout).toBe("v1\n");
    await sbx.kill();
  });

  it("runs commands: exit 0, a non-zero exit, stderr, and a background command", async () => {
    const sbx = await create();
    const ok = await sbx.commands.run("echo hello");
    expect(ok).toMatchObject({ exitCode: 0, stdout: "hello\n", stderr: "" });
    const failed = await sbx.commands.run("exit 3").catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect((failed as CommandExitError).exitCode).toBe(3);
    const err = await sbx.commands.run("echo oops >&2");
    expect(err).toMatchObject({ exitCode: 0, stdout: "", stderr: "oops\n" });
    const handle = await sbx.commands.run("echo from-background", { background: true });
    expect(handle.pid).toBeGreaterThan(0);
    expect(await handle.wait()).toMatchObject({ exitCode: 0, stdout: "from-background\n" });
    await sbx.kill();
  });

  it("writes and reads files, and reports a missing one", async () => {
    const sbx = await create();
    const written = await sbx.files.write("notes.txt", "kept");
    expect(written).toMatchObject({ path: "/home/user/notes.txt", name: "notes.txt" });
    expect(await sbx.files.read("/home/user/notes.txt")).toBe("kept");
    // From envd 0.5.7 on the SDK may upload a raw body instead of a form.
    await sbx.files.write("/tmp/raw.txt", "raw", { useOctetStream: true });
    expect(await sbx.files.read("/tmp/raw.txt")).toBe("raw");
    await expect(sbx.files.read("/nope.txt")).rejects.toBeInstanceOf(FileNotFoundError);
    await sbx.kill();
  });

  it("checks isRunning against the agent's GET /health", async () => {
    const sbx = await create();
    const before = sim.counters.get("GET /health");
    expect(await sbx.isRunning()).toBe(true);
    expect(sim.counters.get("GET /health")).toBe(before + 1);
    await sbx.kill();
  });

  it("sets the time to live with POST /sandboxes/{id}/timeout, shorter or longer", async () => {
    const sbx = await create();
    await sbx.setTimeout(120_000);
    expect(sim.state.sandbox(sbx.sandboxId)?.endAt).toBe(clock.now() + 120_000);
    await sbx.setTimeout(30_000);
    expect((await sbx.getInfo()).endAt.getTime()).toBe(clock.now() + 30_000);
    await sbx.kill();
  });

  it("reads metrics", async () => {
    const sbx = await create();
    const metrics = await sbx.getMetrics();
    expect(Array.isArray(metrics)).toBe(true);
    for (const m of metrics) expect(m.cpuCount).toBeGreaterThan(0);
    await sbx.kill();
  });

  it("pauses; a paused sandbox is listed, refuses agent calls and is not running", async () => {
    const sbx = await create();
    await sbx.files.write("kept.txt", "before pause");
    expect(await sbx.pause()).toBe(true);
    expect(sim.state.sandbox(sbx.sandboxId)?.state).toBe("paused");
    const listed = await listAll();
    expect(listed.find((s) => s.sandboxId === sbx.sandboxId)?.state).toBe("paused");
    await expect(sbx.commands.run("echo hi")).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sbx.files.read("kept.txt")).rejects.toBeInstanceOf(TimeoutError);
    expect(await sbx.isRunning()).toBe(false);
    // Pausing twice: E2B answers 409, which the SDK reports as "already paused".
    expect(await sbx.pause()).toBe(false);
    expect(sim.state.sandbox(sbx.sandboxId)?.state).toBe("paused");

    const before = sim.counters.get("POST /v2/sandboxes/{id}/connect");
    const resumed = await Sandbox.connect(sbx.sandboxId, sdkOpts(sim));
    expect(sim.counters.get("POST /v2/sandboxes/{id}/connect")).toBe(before + 1);
    expect(sim.state.sandbox(sbx.sandboxId)).toMatchObject({ state: "running", resumes: 1 });
    expect(await resumed.files.read("kept.txt")).toBe("before pause");
    expect((await resumed.commands.run("echo back")).stdout).toBe("back\n");

    // Connecting to a running sandbox resumes nothing and keeps the longer time to live.
    const endAt = sim.state.sandbox(sbx.sandboxId)?.endAt;
    const again = await Sandbox.connect(sbx.sandboxId, { ...sdkOpts(sim), timeoutMs: 10_000 });
    expect(again.sandboxId).toBe(sbx.sandboxId);
    expect(sim.state.sandbox(sbx.sandboxId)).toMatchObject({ resumes: 1, endAt });
    await resumed.kill();
  });

  it("resumes a paused sandbox on agent traffic when it was created with autoResume", async () => {
    const sbx = await Sandbox.create(templateOn(sim, CURRENT_ENVD_VERSION), {
      ...sdkOpts(sim),
      lifecycle: { onTimeout: "pause", autoResume: true },
    });
    expect(await sbx.pause()).toBe(true);
    expect((await sbx.commands.run("echo awake")).stdout).toBe("awake\n");
    expect(sim.state.sandbox(sbx.sandboxId)).toMatchObject({ state: "running", resumes: 1 });
    await sbx.kill();
  });

  // What the probe's autopause step relies on, as the SDK asks for it: `lifecycle.onTimeout:
  // "pause"` becomes `autoPause: true` on the wire, and the platform pauses at the timeout by itself.
  it("pauses by itself at its timeout when created to, keeping files; kills with reason timeout otherwise", async () => {
    sim.faults.lifecycle.expireSandboxes = true;
    try {
      const opts = { ...sdkOpts(sim), timeoutMs: 5_000 };
      const pausing = await Sandbox.create(templateOn(sim, CURRENT_ENVD_VERSION), {
        ...opts,
        lifecycle: { onTimeout: "pause" },
      });
      const ending = await Sandbox.create(templateOn(sim, CURRENT_ENVD_VERSION), opts);
      await pausing.files.write("kept.txt", "still here");
      clock.advance(6_000);
      expect((await pausing.getInfo()).state).toBe("paused");
      await expect(ending.getInfo()).rejects.toBeInstanceOf(SandboxNotFoundError);
      const killed = sim.events
        .all()
        .find((e) => e.sandboxId === ending.sandboxId && e.type === "sandbox.lifecycle.killed");
      expect(killed?.eventData).toMatchObject({ kill_reason: "timeout" });
      const back = await Sandbox.connect(pausing.sandboxId, { ...sdkOpts(sim), timeoutMs: 60_000 });
      expect(await back.files.read("kept.txt")).toBe("still here");
      expect(sim.state.sandbox(pausing.sandboxId)).toMatchObject({ state: "running", resumes: 1 });
      await back.kill();
    } finally {
      sim.faults.lifecycle.expireSandboxes = false;
    }
  });

  it("kills; a killed sandbox is gone for the API and a timeout for the agent", async () => {
    const sbx = await create();
    await sbx.kill();
    expect(sim.state.sandbox(sbx.sandboxId)).toBeUndefined();
    expect(await Sandbox.kill(sbx.sandboxId, sdkOpts(sim))).toBe(false);
    await expect(sbx.getInfo()).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sbx.setTimeout(60_000)).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sbx.commands.run("echo hi")).rejects.toBeInstanceOf(SandboxNotFoundError);
    await expect(sbx.files.read("kept.txt")).rejects.toBeInstanceOf(TimeoutError);
    expect(await sbx.isRunning()).toBe(false);
    await expect(Sandbox.connect(sbx.sandboxId, sdkOpts(sim))).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
  });

  // The agent refuses what that envd refuses (below 0.4.0: no user; below 0.5.7: a raw upload), so
  // these pass only because the SDK sends `username` and `Authorization: Basic` below 0.4.0 and
  // falls back to a form below 0.5.7, as its versions.ts switches say.
  it.each(ENVD_VERSION_MIX)("runs, writes and reads on envd %s", async (version) => {
    const sbx = await create(version);
    expect((await sbx.getInfo()).envdVersion).toBe(version);
    expect((await sbx.commands.run("echo $USER")).stdout).toBe("user\n");
    await sbx.files.write("v.txt", version, { useOctetStream: true });
    expect(await sbx.files.read("/home/user/v.txt")).toBe(version);
    expect(await sbx.isRunning()).toBe(true);
    await sbx.kill();
  });
});
