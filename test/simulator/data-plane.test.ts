import { FormData, request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import {
  createSandbox,
  eventKinds,
  output,
  parseFrames,
  requestEnvelope,
  runCommand,
} from "./helpers.js";

describe("data plane", () => {
  let sim: Simulator;
  let id: string;
  beforeAll(async () => {
    sim = await startSimulator({ sandboxes: 20 });
    id = (await createSandbox(sim)).sandboxID;
  });
  afterEach(() => sim.faults.clear());
  afterAll(() => sim.close());

  it("streams start, stdout, end and an empty end-of-stream for `echo hi`", async () => {
    const res = await runCommand(sim, id, "echo hi");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/connect+json");
    const frames = parseFrames(res.body);
    expect(eventKinds(frames)).toEqual(["start", "data", "end", "END_STREAM"]);
    expect(frames[0]!.json).toEqual({ event: { start: { pid: expect.any(Number) } } });
    expect(output(frames, "stdout")).toBe("hi\n");
    // Protobuf JSON: a zero exit code is omitted.
    expect(frames[2]!.json).toEqual({ event: { end: { exited: true, status: "exit status 0" } } });
    expect(frames[3]).toEqual({ flags: 0x02, json: {} });
    expect(sim.counters.get("POST /process.Process/Start")).toBeGreaterThan(0);
  });

  it("gzips every frame when the client accepts gzip", async () => {
    const res = await runCommand(sim, id, "echo 'zipped words'", {
      "connect-accept-encoding": "gzip",
    });
    expect(res.headers["connect-content-encoding"]).toBe("gzip");
    const frames = parseFrames(res.body);
    expect(frames.every((f) => (f.flags & 0x01) === 0x01)).toBe(true);
    expect(output(frames, "stdout")).toBe("zipped words\n");
  });

  it("reports an unknown command on stderr with exit code 127", async () => {
    const frames = parseFrames((await runCommand(sim, id, "frobnicate --now")).body);
    expect(output(frames, "stderr")).toBe("bash: frobnicate: command not found\n");
    expect(frames.at(-2)!.json).toMatchObject({ event: { end: { exitCode: 127, exited: true } } });
  });

  it("redirects into the sandbox's files and reads them back in one script", async () => {
    const frames = parseFrames(
      (await runCommand(sim, id, 'echo "a b" > /tmp/x && echo c >> /tmp/x; cat /tmp/x; exit 3'))
        .body,
    );
    expect(output(frames, "stdout")).toBe("a b\nc\n");
    expect(frames.at(-2)!.json).toMatchObject({ event: { end: { exitCode: 3 } } });
    expect(sim.state.sandboxes.get(id)!.files.get("/tmp/x")!.toString()).toBe("a b\nc\n");
  });

  it("writes a file as multipart and reads the same bytes back", async () => {
    const token = sim.state.sandboxes.get(id)!.accessToken!;
    const headers = { host: sim.sandboxHost(id), "x-access-token": token };
    const form = new FormData();
    form.append("file", new Blob([Buffer.from("probe\u00e9\n")]), "probe.txt");
    const put = await request(`${sim.dataUrl}/files?path=/tmp/probe.txt`, {
      method: "POST",
      headers,
      body: form,
    });
    expect(put.statusCode).toBe(200);
    expect(await put.body.json()).toEqual([
      { path: "/tmp/probe.txt", name: "probe.txt", type: "file" },
    ]);
    const get = await request(`${sim.dataUrl}/files?path=/tmp/probe.txt`, { headers });
    expect(get.statusCode).toBe(200);
    expect(Buffer.from(await get.body.arrayBuffer()).toString()).toBe("probe\u00e9\n");
    const frames = parseFrames((await runCommand(sim, id, "cat /tmp/probe.txt")).body);
    expect(output(frames, "stdout")).toBe("probe\u00e9\n");
  });

  it("writes an octet-stream body relative to the home directory, and 404s a missing file", async () => {
    const headers = {
      host: sim.sandboxHost(id),
      "x-access-token": sim.state.sandboxes.get(id)!.accessToken!,
    };
    const put = await request(`${sim.dataUrl}/files?path=notes.txt`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/octet-stream" },
      body: "raw",
    });
    expect(await put.body.json()).toEqual([
      { path: "/home/user/notes.txt", name: "notes.txt", type: "file" },
    ]);
    const missing = await request(`${sim.dataUrl}/files?path=/nope`, { headers });
    await missing.body.dump();
    expect(missing.statusCode).toBe(404);
    expect(sim.counters.get("POST /files")).toBeGreaterThanOrEqual(1);
    expect(sim.counters.get("GET /files")).toBeGreaterThanOrEqual(1);
  });

  // E2B's client proxy finds a paused sandbox in no node's catalog and, unless the sandbox was
  // created with autoResume, answers its "sandbox not found" error (502, JSON for non-browsers).
  it("answers a paused sandbox with E2B's 502 sandbox-not-found body, without resuming it", async () => {
    const paused =
      [...sim.state.sandboxes.values()].find((s) => s.state === "paused" && !s.accessToken) ??
      sim.state.addSandbox({ state: "paused" });
    const res = await runCommand(sim, paused.sandboxID, "echo hi");
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body.toString())).toEqual({
      sandboxId: paused.sandboxID,
      message: "The sandbox was not found",
      code: 502,
    });
    const file = await request(`${sim.dataUrl}/files?path=/x`, {
      headers: { host: sim.sandboxHost(paused.sandboxID) },
    });
    await file.body.dump();
    expect(file.statusCode).toBe(502);
    expect(sim.state.sandboxes.get(paused.sandboxID)!.state).toBe("paused");
  });

  it("answers 502 for an unknown sandbox and 401 without the access token", async () => {
    expect((await runCommand(sim, "idoesnotexist", "echo hi")).status).toBe(502);
    const res = await request(`${sim.dataUrl}/files?path=/x`, {
      headers: { host: sim.sandboxHost(id) },
    });
    await res.body.dump();
    expect(res.statusCode).toBe(401);
  });

  it("sends keepalive events while the command runs", async () => {
    sim.faults.stream.keepaliveIntervalMs = 20;
    const kinds = eventKinds(
      // 20 intervals of 20 ms: at least 3 keepalives on a loaded machine too.
      parseFrames((await runCommand(sim, id, "sleep 0.4; echo done")).body),
    );
    expect(kinds[0]).toBe("start");
    expect(kinds.filter((k) => k === "keepalive").length).toBeGreaterThanOrEqual(3);
    expect(kinds.slice(-3)).toEqual(["data", "end", "END_STREAM"]);
  });

  it("times the start event and the end from request arrival", async () => {
    // Bounds of 200 ms and more above each point: a loaded machine delays a frame tens of ms.
    sim.faults.stream.startDelayMs = 100;
    sim.faults.stream.endDelayMs = 300;
    const t0 = performance.now();
    const res = await request(`${sim.dataUrl}/process.Process/Start`, {
      method: "POST",
      headers: {
        host: sim.sandboxHost(id),
        "content-type": "application/connect+json",
        "x-access-token": sim.state.sandboxes.get(id)!.accessToken!,
      },
      body: requestEnvelope({ process: { cmd: "/bin/bash", args: ["-l", "-c", "true"] } }),
    });
    const arrivals: number[] = [];
    for await (const _chunk of res.body) arrivals.push(performance.now() - t0);
    expect(arrivals[0]).toBeGreaterThanOrEqual(99);
    expect(arrivals[0]).toBeLessThan(300);
    expect(arrivals.at(-1)).toBeGreaterThanOrEqual(399);
    expect(arrivals.at(-1)).toBeLessThan(600);
  });

  it("ends with deadline_exceeded when Connect-Timeout-Ms expires", async () => {
    const frames = parseFrames(
      (await runCommand(sim, id, "sleep 30", { "connect-timeout-ms": "60" })).body,
    );
    expect(eventKinds(frames)).toEqual(["start", "END_STREAM"]);
    expect(frames[1]!.json).toEqual({
      error: { code: "deadline_exceeded", message: expect.any(String) },
    });
  });

  it("carries an injected error in the end-of-stream frame with HTTP 200", async () => {
    sim.faults.stream.endStreamError = { code: "unavailable", message: "agent restarting" };
    const res = await runCommand(sim, id, "echo hi");
    expect(res.status).toBe(200);
    const frames = parseFrames(res.body);
    expect(frames.at(-1)).toEqual({
      flags: 0x02,
      json: { error: { code: "unavailable", message: "agent restarting" } },
    });
  });

  it("closes without an end-of-stream frame when truncated", async () => {
    sim.faults.stream.truncate = true;
    expect(eventKinds(parseFrames((await runCommand(sim, id, "echo hi")).body))).toEqual([
      "start",
      "data",
      "end",
    ]);
  });

  it("sends a frame header declaring 4 GiB when the envelope is malformed", async () => {
    sim.faults.stream.malformedEnvelope = true;
    const { body } = await runCommand(sim, id, "echo hi");
    expect(() => parseFrames(body)).toThrow(/partial payload/);
  });

  it("replaces stdout when wrongStdout is set", async () => {
    sim.faults.stream.wrongStdout = true;
    expect(output(parseFrames((await runCommand(sim, id, "echo hi")).body), "stdout")).not.toBe(
      "hi\n",
    );
  });

  it("rejects a bad request envelope in the end-of-stream frame, and a wrong content type with 415", async () => {
    const token = sim.state.sandboxes.get(id)!.accessToken!;
    const headers = { host: sim.sandboxHost(id), "x-access-token": token };
    const bad = await request(`${sim.dataUrl}/process.Process/Start`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/connect+json" },
      body: Buffer.from([0, 0, 0, 0, 9, 0x7b]),
    });
    const frames = parseFrames(Buffer.from(await bad.body.arrayBuffer()));
    expect(frames).toEqual([
      { flags: 0x02, json: { error: { code: "invalid_argument", message: expect.any(String) } } },
    ]);
    const wrong = await request(`${sim.dataUrl}/process.Process/Start`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: "{}",
    });
    await wrong.body.dump();
    expect(wrong.statusCode).toBe(415);
  });
  it("holds the stream open while a background job still writes to it, as envd does", async () => {
    const t0 = performance.now();
    const held = parseFrames((await runCommand(sim, id, "sleep 0.2 & echo $!")).body);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    expect(output(held, "stdout")).toMatch(/^\d+\n$/);
    const t1 = performance.now();
    const free = await runCommand(sim, id, "sleep 600 >/dev/null 2>&1 </dev/null & echo $!");
    expect(performance.now() - t1).toBeLessThan(5_000);
    const pid = output(parseFrames(free.body), "stdout").trim();
    expect(sim.state.sandboxes.get(id)!.processes.get(Number(pid))?.command).toBe("sleep 600");
  });
});
