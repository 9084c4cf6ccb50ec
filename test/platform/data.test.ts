import { EnvHttpProxyAgent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ControlClient } from "../../src/platform/control.js";
import { DataClient, type SandboxRef } from "../../src/platform/data.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { startProxy, type TestProxy } from "../helpers/proxy.js";

let sim: Simulator;
let proxy: TestProxy;
let control: ControlClient;
let data: DataClient;
let sb: SandboxRef;
const savedProxy = process.env.HTTP_PROXY;

beforeAll(async () => {
  sim = await startSimulator({ sandboxes: 5, domain: "sandbox.invalid" });
  proxy = await startProxy();
  // The environment names a proxy: the control channel must use it, the data channel must not.
  process.env.HTTP_PROXY = proxy.url;
  process.env.HTTPS_PROXY = proxy.url;
  control = new ControlClient({
    apiUrl: sim.apiUrl,
    apiKey: "",
    authStyle: "x-api-key",
    timeoutMs: 5_000,
    retries: 0,
    dispatcher: new EnvHttpProxyAgent({ httpProxy: proxy.url, noProxy: "" }),
  });
  data = new DataClient({
    sandboxDomain: "sandbox.invalid",
    proxyScheme: "http",
    proxyNodeIp: "127.0.0.1",
    proxyPortHttp: sim.dataPort,
    agentPort: 49983,
    timeoutMs: 5_000,
  });
  const created = await control.createSandbox({ templateId: sim.state.templates[0]!.templateID });
  // An unresolvable domain proves the dial goes to ProxyNodeIP while Host still names the sandbox.
  sb = {
    id: created.id,
    domain: "sandbox.invalid",
    ...(created.accessToken ? { accessToken: created.accessToken } : {}),
  };
});
afterEach(() => {
  sim.faults.clear();
  sim.faults.stream = {};
});
afterAll(async () => {
  if (savedProxy === undefined) delete process.env.HTTP_PROXY;
  else process.env.HTTP_PROXY = savedProxy;
  delete process.env.HTTPS_PROXY;
  await data.close();
  await control.close();
  await proxy.close();
  await sim.close();
});

describe("DataClient", () => {
  it("runs echo through /bin/bash -l -c and returns stdout and exit code", async () => {
    const seenBefore = proxy.seen.length;
    const r = await data.run(sb, "echo hi");
    expect(r).toMatchObject({ stdout: "hi\n", stderr: "", exitCode: 0 });
    expect(sim.counters.get("POST /process.Process/Start")).toBeGreaterThan(0);
    expect(proxy.seen.length).toBe(seenBefore);
  });

  it("reports non-zero exit codes and stderr", async () => {
    expect((await data.run(sb, "exit 3")).exitCode).toBe(3);
    const r = await data.run(sb, "nosuchcmd");
    expect(r.exitCode).toBe(127);
    expect(r.stderr).toContain("command not found");
  });

  it("times the events of the stream in order", async () => {
    sim.faults.stream = { startDelayMs: 20, endDelayMs: 40 };
    let firstByte = -1;
    const events: Array<{ type: string; at: number }> = [];
    for await (const { event, at } of data.startProcess(
      sb,
      { cmd: "/bin/bash", args: ["-l", "-c", "echo x"] },
      { onFirstByte: (t) => (firstByte = t) },
    )) {
      events.push({ type: event.type, at });
    }
    expect(events.map((e) => e.type)).toEqual(["start", "data", "end"]);
    expect(firstByte).toBeGreaterThan(0);
    expect(events[2]!.at).toBeGreaterThanOrEqual(events[0]!.at);
  });

  it("decodes gzip-compressed frames", async () => {
    sim.faults.stream = { compress: true };
    expect((await data.run(sb, "echo zipped")).stdout).toBe("zipped\n");
  });

  it("turns an end-of-stream error into a typed error", async () => {
    sim.faults.stream = { endStreamError: { code: "internal", message: "agent broke" } };
    await expect(data.run(sb, "echo x")).rejects.toMatchObject({
      code: "ERR_CONNECT_END_STREAM",
      connectCode: "internal",
    });
  });

  it("reports a stream closed without end-of-stream as truncated", async () => {
    sim.faults.stream = { truncate: true };
    await expect(data.run(sb, "echo x")).rejects.toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED" });
  });

  it("writes a file and reads it back", async () => {
    await data.writeFile(sb, "/tmp/probe.txt", "nonce-123");
    expect((await data.readFile(sb, "/tmp/probe.txt")).toString()).toBe("nonce-123");
    expect((await data.run(sb, "cat /tmp/probe.txt")).stdout).toBe("nonce-123");
  });

  it("types the refusal of a paused sandbox and a missing file", async () => {
    await expect(data.readFile(sb, "/nope")).rejects.toMatchObject({
      code: "ERR_DATA_PLANE_HTTP",
      status: 404,
    });
    await control.pauseSandbox(sb.id);
    try {
      await expect(data.run(sb, "echo x")).rejects.toMatchObject({
        code: "ERR_DATA_PLANE_HTTP",
        status: 409,
      });
      expect(sim.state.sandbox(sb.id)!.state).toBe("paused");
    } finally {
      await control.resumeSandbox(sb.id);
    }
  });

  it("leaves the proxy to the control channel only", async () => {
    const before = proxy.seen.length;
    await control.getSandbox(sb.id);
    await data.run(sb, "echo via-node");
    expect(proxy.seen.length).toBe(before + 1);
    expect(proxy.seen.every((h) => h === new URL(sim.apiUrl).host)).toBe(true);
  });
});
