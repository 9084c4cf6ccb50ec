import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createTlsServer } from "node:https";
import { EnvHttpProxyAgent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ControlClient } from "../../../src/platform/control/control.js";
import { DataClient, type DataOptions, type SandboxRef } from "../../../src/platform/data/data.js";
import { encodeEndStream, encodeJsonEnvelope } from "../../../src/platform/data/envelope.js";
import { type Simulator, startSimulator } from "../../../src/simulator/index.js";
import { testControl } from "../../helpers/control.js";
import { errorTexts } from "../../helpers/error-texts.js";
import { listenLoopback } from "../../helpers/loopback.js";
import { startProxy, type TestProxy } from "../../helpers/proxy.js";

const DOMAIN = "sandbox.invalid";
let sim: Simulator;
let proxy: TestProxy;
let control: ControlClient;
let data: DataClient;
let sb: SandboxRef;
const closers: Array<() => Promise<void>> = [];
const savedEnv = { HTTP_PROXY: process.env.HTTP_PROXY, HTTPS_PROXY: process.env.HTTPS_PROXY };

/** A data client that dials `port` on 127.0.0.1 whatever the sandbox host says. */
function dataClient(port: number, extra: Partial<DataOptions> = {}): DataClient {
  const c = new DataClient({
    sandboxDomain: DOMAIN,
    proxyScheme: "http",
    proxyNodeIp: "127.0.0.1",
    proxyPortHttp: port,
    agentPort: 49983,
    timeoutMs: 5_000,
    ...extra,
  });
  closers.push(() => c.close());
  return c;
}

beforeAll(async () => {
  // An unresolvable domain proves the dial goes to ProxyNodeIP while Host still names the sandbox.
  sim = await startSimulator({ sandboxes: 5, domain: DOMAIN });
  proxy = await startProxy();
  // The environment names a proxy: the control channel must use it, the data channel must not.
  process.env.HTTP_PROXY = proxy.url;
  process.env.HTTPS_PROXY = proxy.url;
  control = testControl({
    apiUrl: sim.apiUrl,
    apiKey: "mgmt-key-never-on-data-plane",
    envProxy: true,
    dispatcher: new EnvHttpProxyAgent({ httpProxy: proxy.url, noProxy: "", proxyTunnel: false }),
  });
  data = dataClient(sim.dataPort);
  const template = sim.state.templates.find((t) => t.status === "ready")!;
  const created = await control.createSandbox({ templateId: template.templateID });
  expect(created.accessToken).toBeTruthy();
  sb = { id: created.id, domain: DOMAIN, accessToken: created.accessToken! };
});
afterEach(() => {
  sim.faults.clear();
});
afterAll(async () => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  for (const close of closers) await close();
  await control.close();
  await proxy.close();
  await sim.close();
});

describe("DataClient against the simulator", () => {
  it("runs echo through /bin/bash -l -c via ProxyNodeIP, bypassing the HTTP proxy", async () => {
    sim.counters.reset();
    const proxied = proxy.requests.length;
    expect(await data.run(sb, "echo hi")).toMatchObject({
      stdout: "hi\n",
      stderr: "",
      exitCode: 0,
    });
    expect(sim.counters.get("POST /process.Process/Start")).toBe(1);
    expect(proxy.requests.length).toBe(proxied);
  });

  it("falls back to the configured sandbox domain when the sandbox has none", async () => {
    const { domain: _, ...bare } = sb;
    expect((await data.run(bare, "echo fallback")).stdout).toBe("fallback\n");
  });

  it("reports non-zero exit codes and stderr", async () => {
    expect(await data.run(sb, "exit 3")).toMatchObject({ exitCode: 3, stdout: "" });
    const r = await data.run(sb, "nosuchcmd");
    expect(r.exitCode).toBe(127);
    expect(r.stderr).toContain("command not found");
  });

  it("times the events of the stream in order, with their frame offsets", async () => {
    sim.faults.stream = { startDelayMs: 20, endDelayMs: 40 };
    let firstByte = -1;
    const events: Array<{ type: string; at: number; offset: number }> = [];
    for await (const { event, at, offset } of data.startProcess(
      sb,
      { cmd: "/bin/bash", args: ["-l", "-c", "echo x"] },
      { onFirstByte: (t) => (firstByte = t) },
    )) {
      events.push({ type: event.type, at, offset });
    }
    expect(events.map((e) => e.type)).toEqual(["start", "data", "end"]);
    expect(events[0]!.offset).toBe(0);
    expect(events[1]!.offset).toBeGreaterThan(events[0]!.offset);
    expect(events[2]!.offset).toBeGreaterThan(events[1]!.offset);
    expect(firstByte).toBeGreaterThan(0);
    expect(events[0]!.at).toBeGreaterThanOrEqual(firstByte);
    // Ordered in time too; how closely `at` follows the injected delays is the bench's figure
    // (a wall-clock bound here failed under load).
    expect(events[2]!.at).toBeGreaterThanOrEqual(events[1]!.at);
    expect(events[1]!.at).toBeGreaterThanOrEqual(events[0]!.at);
  });

  it("asks for gzip frames with acceptGzip and decodes them", async () => {
    const offsets = async (acceptGzip: boolean): Promise<number[]> => {
      const out: number[] = [];
      for await (const e of data.startProcess(
        sb,
        { cmd: "echo", args: ["zipped"] },
        { acceptGzip },
      ))
        out.push(e.offset);
      return out;
    };
    // Gzip frames have other lengths, so the frame offsets differ only if the agent compressed.
    expect(await offsets(true)).not.toEqual(await offsets(false));
    expect((await data.run(sb, "echo zipped", { acceptGzip: true })).stdout).toBe("zipped\n");
    sim.faults.stream = { compress: true };
    expect((await data.run(sb, "echo forced")).stdout).toBe("forced\n");
  });

  it("turns an end-of-stream error into a typed ConnectError", async () => {
    sim.faults.stream = { endStreamError: { code: "internal", message: "agent broke" } };
    await expect(data.run(sb, "echo x")).rejects.toMatchObject({
      code: "ERR_CONNECT_END_STREAM",
      connectCode: "internal",
      connectMessage: "agent broke",
    });
  });

  it("reports a stream closed without end-of-stream as truncated", async () => {
    sim.faults.stream = { truncate: true };
    await expect(data.run(sb, "echo x")).rejects.toMatchObject({ code: "ERR_ENVELOPE_TRUNCATED" });
  });

  it("refuses a frame that declares an absurd length", async () => {
    sim.faults.stream = { malformedEnvelope: true };
    await expect(data.run(sb, "echo x")).rejects.toMatchObject({ code: "ERR_ENVELOPE_TOO_LARGE" });
  });

  it("types a stream that does not arrive in time", async () => {
    sim.faults.stream = { startDelayMs: 2_000 };
    await expect(
      dataClient(sim.dataPort, { timeoutMs: 50 }).run(sb, "echo x"),
    ).rejects.toMatchObject({
      code: "ERR_PLATFORM_TIMEOUT",
      endpoint: "/process.Process/Start",
    });
  });

  it("writes a file and reads it back", async () => {
    await data.writeFile(sb, "/tmp/probe.txt", "nonce-123");
    expect((await data.readFile(sb, "/tmp/probe.txt")).toString()).toBe("nonce-123");
    expect((await data.run(sb, "cat /tmp/probe.txt")).stdout).toBe("nonce-123");
    const bytes = Buffer.from([0, 255, 1, 254]);
    await data.writeFile(sb, "/tmp/bin", bytes);
    expect(await data.readFile(sb, "/tmp/bin")).toEqual(bytes);
  });

  it("types a missing file and a wrong access token without showing the token", async () => {
    await expect(data.readFile(sb, "/nope")).rejects.toMatchObject({
      code: "ERR_DATA_PLANE_HTTP",
      status: 404,
      endpoint: "/files",
    });
    const err = await data
      .run({ ...sb, accessToken: "ea_wrong_token" }, "echo x")
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "ERR_DATA_PLANE_HTTP", status: 401 });
    expect((err as Error).message).not.toContain("ea_wrong_token");
  });

  it("types the refusal of a paused sandbox and leaves it paused", async () => {
    await control.pauseSandbox(sb.id);
    try {
      await expect(data.run(sb, "echo x")).rejects.toMatchObject({
        code: "ERR_DATA_PLANE_HTTP",
        status: 502,
      });
      // E2B's proxy answers a paused sandbox (without auto-resume) with its "not found" 502.
      await expect(data.readFile(sb, "/tmp/probe.txt")).rejects.toMatchObject({ status: 502 });
      expect(sim.state.sandbox(sb.id)!.state).toBe("paused");
    } finally {
      await control.resumeSandbox(sb.id);
    }
  });

  it("leaves the proxy to the control channel only", async () => {
    const before = proxy.requests.length;
    await control.getSandbox(sb.id);
    await data.run(sb, "echo via-node");
    await data.writeFile(sb, "/tmp/x", "x");
    await data.readFile(sb, "/tmp/x");
    const apiHost = new URL(sim.apiUrl).host;
    expect(proxy.requests.slice(before).map((r) => `${r.method} ${r.host}`)).toEqual([
      `GET ${apiHost}`,
    ]);
    expect(proxy.requests.every((r) => r.host === apiHost)).toBe(true);
  });
});

interface Recorded {
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  servername?: string | false;
}

/** An agent stand-in that records each request and answers with `reply`. */
function recorder(reply: (res: ServerResponse) => void): {
  seen: Recorded[];
  handler: (req: IncomingMessage, res: ServerResponse) => void;
} {
  const seen: Recorded[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
        servername: (req.socket as { servername?: string | false }).servername,
      });
      reply(res);
    });
  };
  return { seen, handler };
}

async function listen(server: ReturnType<typeof createServer>): Promise<number> {
  const listening = await listenLoopback(server);
  closers.push(listening.close);
  return listening.port;
}

function cannedStream(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/connect+json" });
  res.write(encodeJsonEnvelope({ event: { start: { pid: 7 } } }));
  res.write(
    encodeJsonEnvelope({ event: { data: { stdout: Buffer.from("hi\n").toString("base64") } } }),
  );
  res.write(encodeJsonEnvelope({ event: { end: { exited: true, status: "exit status 0" } } }));
  res.end(encodeEndStream());
}

describe("DataClient on the wire", () => {
  it("sends the Connect headers, the agent token and one flags-0 envelope, and never the API key", async () => {
    const rec = recorder(cannedStream);
    const c = dataClient(await listen(createServer(rec.handler)));
    const ref = { id: "abc", accessToken: "tok-1" };
    expect(
      await c.run(ref, "echo hi", { deadlineMs: 1_500, acceptGzip: true, keepaliveIntervalS: 15 }),
    ).toEqual({ stdout: "hi\n", stderr: "", exitCode: 0, status: "exit status 0" });
    await c.run(ref, "echo hi");
    const [first, second] = rec.seen as [Recorded, Recorded];
    expect(first.headers).toMatchObject({
      host: "49983-abc.sandbox.invalid",
      "content-type": "application/connect+json",
      "connect-protocol-version": "1",
      "connect-timeout-ms": "1500",
      "connect-accept-encoding": "gzip",
      "keepalive-ping-interval": "15",
      "x-access-token": "tok-1",
    });
    for (const h of ["x-api-key", "authorization", "proxy-authorization"])
      expect(first.headers[h]).toBeUndefined();
    for (const h of ["connect-timeout-ms", "connect-accept-encoding", "keepalive-ping-interval"])
      expect(second.headers[h]).toBeUndefined();
    expect(first.body[0]).toBe(0);
    expect(first.body.readUInt32BE(1)).toBe(first.body.length - 5);
    expect(JSON.parse(first.body.subarray(5).toString())).toEqual({
      process: { cmd: "/bin/bash", args: ["-l", "-c", "echo hi"], envs: {} },
    });
  });

  it("names the user as E2B's SDK does: below envd 0.4.0 only, an unknown version as current", async () => {
    const rec = recorder((res) => {
      if (rec.seen.at(-1)?.url.startsWith("/process")) return cannedStream(res);
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
    });
    const c = dataClient(await listen(createServer(rec.handler)));
    const basicUser = `Basic ${Buffer.from("user:").toString("base64")}`;
    const cases: Array<[string | undefined, boolean]> = [
      ["0.1.5", true],
      ["0.3.9", true],
      ["0.4.0", false],
      ["0.4.0-rc.1", false],
      ["0.10.2", false],
      [undefined, false],
      ["next", false],
    ];
    for (const [envdVersion, named] of cases) {
      const ref = { id: "abc", ...(envdVersion !== undefined && { envdVersion }) };
      await c.run(ref, "echo hi");
      await c.writeFile(ref, "/tmp/a b.txt", "x");
      await c.readFile(ref, "/tmp/a b.txt");
      const [start, write, read] = rec.seen.splice(0) as [Recorded, Recorded, Recorded];
      const what = String(envdVersion);
      expect(start.headers.authorization, what).toBe(named ? basicUser : undefined);
      for (const r of [write, read]) {
        const q = new URL(r.url, "http://agent").searchParams;
        expect([q.get("path"), q.get("username")], what).toEqual([
          "/tmp/a b.txt",
          named ? "user" : null,
        ]);
        expect(r.headers.authorization, what).toBeUndefined();
      }
      expect(write.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    }
  });

  it("routes by E2b-Sandbox-Id and E2b-Sandbox-Port to sandbox.{domain} when told to", async () => {
    const rec = recorder(cannedStream);
    const c = dataClient(await listen(createServer(rec.handler)), { routing: "headers" });
    await c.run({ id: "abc", domain: "eu.example", accessToken: "tok-1" }, "echo hi");
    await c.run({ id: "def" }, "echo hi");
    const [first, second] = rec.seen as [Recorded, Recorded];
    expect(first.headers).toMatchObject({
      host: "sandbox.eu.example",
      "e2b-sandbox-id": "abc",
      "e2b-sandbox-port": "49983",
      "x-access-token": "tok-1",
    });
    expect(second.headers).toMatchObject({ host: `sandbox.${DOMAIN}`, "e2b-sandbox-id": "def" });
    expect(c.origin({ id: "abc" })).toBe(`http://sandbox.${DOMAIN}`);
    // By host name (the default), no routing header goes out.
    const plain = recorder(cannedStream);
    await dataClient(await listen(createServer(plain.handler))).run({ id: "abc" }, "echo hi");
    expect(plain.seen[0]?.headers["e2b-sandbox-id"]).toBeUndefined();
    expect(plain.seen[0]?.headers.host).toBe(`49983-abc.${DOMAIN}`);
  });

  it("types a Connect error answer with its code and a short excerpt", async () => {
    const rec = recorder((res) =>
      res
        .writeHead(503, { "content-type": "application/json" })
        .end(JSON.stringify({ code: "unavailable", message: `agent busy ${"y".repeat(500)}` })),
    );
    const c = dataClient(await listen(createServer(rec.handler)));
    const err = await c.run({ id: "abc" }, "echo").catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "ERR_DATA_PLANE_HTTP",
      status: 503,
      connectCode: "unavailable",
      endpoint: "/process.Process/Start",
    });
    expect((err as { bodyExcerpt: string }).bodyExcerpt.length).toBeLessThanOrEqual(203);
  });

  it("dials the node over TLS with the sandbox host as SNI and certificate name", async () => {
    const rec = recorder(cannedStream);
    const port = await listen(createTlsServer({ cert: TEST_CERT, key: TEST_KEY }, rec.handler));
    const c = dataClient(port, { proxyScheme: "https", connect: { ca: TEST_CERT } });
    expect((await c.run({ id: "abc" }, "echo hi")).stdout).toBe("hi\n");
    expect(rec.seen[0]!.servername).toBe("49983-abc.sandbox.invalid");
    expect(rec.seen[0]!.headers.host).toBe("49983-abc.sandbox.invalid");
  });
});

// Self-signed test certificate for *.sandbox.invalid (P-256, valid until 2126); test use only.
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBqjCCAU+gAwIBAgIUQirSPENNEtQBj0y+26o2I8w7ndgwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPc2FuZGJveC5pbnZhbGlkMCAXDTI2MTEyMzAwNDIyN1oYDzIx
MjYxMDMwMDA0MjI3WjAaMRgwFgYDVQQDDA9zYW5kYm94LmludmFsaWQwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQxcbkJsMZnkQPpLrr9p2lmeiEAJfIEg865m4o4
dEN4tIRkdHZBdAGz8vPraw1c1+GRcwYy99dBng/hM2zZowflo3EwbzAdBgNVHQ4E
FgQUJfqsXYQiYu+8CkmJ1LSjF90PC9wwHwYDVR0jBBgwFoAUJfqsXYQiYu+8CkmJ
1LSjF90PC9wwDwYDVR0TAQH/BAUwAwEB/zAcBgNVHREEFTATghEqLnNhbmRib3gu
aW52YWxpZDAKBggqhkjOPQQDAgNJADBGAiEAhISaB2+8EHsQFA/QvqkiTsuhrDl7
ylT4N8i0AvfueIwCIQCcUtHR0sEms6jqt6kRxUgI5aCeKsfXR678xOglFmGE9Q==
-----END CERTIFICATE-----
`;
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeGybpwR+kshBfric
h7YHA6RxJ73Gnaxrka32WI8ogP2hRANCAAQxcbkJsMZnkQPpLrr9p2lmeiEAJfIE
g865m4o4dEN4tIRkdHZBdAGz8vPraw1c1+GRcwYy99dBng/hM2zZowfl
-----END PRIVATE KEY-----
`;

type AgentMode =
  | "end-stream-error"
  | "bad-event"
  | "unknown-event"
  | "encoding"
  | "html"
  | 400
  | 404
  | 500;

describe("DataClient never lets an access token out in an error", () => {
  const TOKEN = "ea_secret_token_4242";
  let mode: AgentMode = 400;
  let port = 0;

  beforeAll(async () => {
    port = await listen(
      createServer((req, res) => {
        // Answered once the request is read: an answer racing the upload could reset it.
        req.resume();
        req.on("end", () => answer(req.headers, res));
      }),
    );
    function answer(reqHeaders: IncomingHttpHeaders, res: ServerResponse): void {
      const token = String(reqHeaders["x-access-token"] ?? "");
      // 30 characters first: process-event quotes 40, so the token straddles that cut.
      const echo = `${"p".repeat(29)}${token} header=${token}`;
      if (typeof mode === "number") {
        const body = JSON.stringify({ code: "invalid_argument", message: `bad token ${echo}` });
        res.writeHead(mode, { "content-type": "application/json" }).end(body);
        return;
      }
      if (mode === "html") {
        res.writeHead(200, { "content-type": "text/html" }).end(`<html>${echo}</html>`);
        return;
      }
      const headers: Record<string, string> = { "content-type": "application/connect+json" };
      if (mode === "encoding") headers["connect-content-encoding"] = token;
      res.writeHead(200, headers);
      if (mode === "bad-event") res.write(encodeJsonEnvelope({ event: { start: { pid: echo } } }));
      if (mode === "unknown-event") res.write(encodeJsonEnvelope({ event: { [token]: {} } }));
      res.end(
        mode === "end-stream-error"
          ? encodeEndStream({ code: "unauthenticated", message: echo }, { echo: [token] })
          : encodeEndStream(),
      );
    }
  });

  const ref = { id: "sb-9", accessToken: TOKEN };
  const calls: Array<[string, (c: DataClient) => Promise<unknown>]> = [
    ["run", (c) => c.run(ref, "echo hi")],
    [
      "startProcess",
      async (c) => {
        for await (const _ of c.startProcess(ref, { cmd: "echo", args: ["hi"] }));
      },
    ],
    ["readFile", (c) => c.readFile(ref, "/tmp/x")],
    ["writeFile", (c) => c.writeFile(ref, "/tmp/x", "x")],
  ];

  it.each([
    "end-stream-error",
    "bad-event",
    "unknown-event",
    "encoding",
    "html",
    400,
    404,
    500,
  ] as AgentMode[])("scrubs the token from every error (answer %s)", async (m) => {
    mode = m;
    const c = dataClient(port);
    let failures = 0;
    for (const [name, call] of calls) {
      const err = await call(c).then(
        () => undefined,
        (e: unknown) => e,
      );
      // Files answer 200 with anything in the stream modes: that is file content, not an error.
      if (err === undefined) continue;
      failures++;
      for (const text of errorTexts(err)) {
        expect(text, `${name}: ${text}`).not.toContain(TOKEN);
        expect(text, `${name}: ${text}`).not.toContain(TOKEN.slice(0, 6));
      }
    }
    expect(failures).toBe(typeof m === "number" ? 4 : 2);
  });

  it("shows where the token was in a Connect error", async () => {
    mode = "end-stream-error";
    const err = await dataClient(port)
      .run(ref, "echo hi")
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "ERR_CONNECT_END_STREAM",
      connectMessage: `${"p".repeat(29)}[REDACTED] header=[REDACTED]`,
      metadata: { echo: ["[REDACTED]"] },
    });
  });
});
