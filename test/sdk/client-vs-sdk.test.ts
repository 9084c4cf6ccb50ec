// Our data-plane client judged by E2B's SDK (npm `e2b`, pinned 2.51.0): for each envd version the
// simulator serves, the probe's requests carry what the SDK's requests carry in the parts the agent
// acts on (the user, its Basic authentication, the access token, the upload encoding, the Connect
// headers, the routing headers), and the whole probe passes on every version.
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControlClient } from "../../src/platform/control/control.js";
import {
  DataClient as Data,
  type DataClient,
  type DataPlaneRouting,
} from "../../src/platform/data/data.js";
import type { ProbeSettings } from "../../src/probe/phase.js";
import type { ProbeStep } from "../../src/probe/probe-steps.js";
import { type ProbeResult, runProbe } from "../../src/probe/runner.js";
import { ENVD_PORT, ENVD_VERSION_MIX, type Simulator } from "../../src/simulator/index.js";
import { multipartBoundary, parseMultipart } from "../../src/simulator/multipart.js";
import type { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { SDK_API_KEY, sdkOpts, startSdkSimulator, templateOn } from "./sdk-setup.js";
import { startWireRecorder, type WireRequest } from "./wire-recorder.js";

const FILE_PATH = "/tmp/sandbox-exporter-probe.txt";
/** The agent calls compared: process start, file write and file read. */
const AGENT_CALLS = ["POST /process.Process/Start", "POST /files", "GET /files"];

/** What a request carries that the agent acts on, with the sandbox it was for as `own`. */
function essentials(r: WireRequest, own: string) {
  const contentType = String(r.headers["content-type"] ?? "");
  const media = contentType.split(";")[0]?.trim() || null;
  const boundary = media === "multipart/form-data" ? multipartBoundary(contentType) : undefined;
  return {
    call: `${r.method} ${r.path}`,
    username: r.query.get("username"),
    path: r.query.get("path"),
    authorization: r.headers.authorization ?? null,
    accessToken: typeof r.headers["x-access-token"] === "string",
    contentType: media,
    parts: boundary ? parseMultipart(r.body, boundary).map((p) => p.name) : null,
    connectProtocolVersion: r.headers["connect-protocol-version"] ?? null,
    connectTimeout: r.headers["connect-timeout-ms"] !== undefined,
    routedTo: r.headers["e2b-sandbox-id"] === own ? "own sandbox" : r.headers["e2b-sandbox-id"],
    routedPort: r.headers["e2b-sandbox-port"] ?? null,
  };
}

/** The agent calls among `requests`, one per kind, in AGENT_CALLS order. */
function agentCalls(requests: readonly WireRequest[], own: string) {
  return AGENT_CALLS.map((call) => {
    const matching = requests.filter((r) => `${r.method} ${r.path}` === call);
    expect(matching, call).toHaveLength(1);
    return essentials(matching[0] as WireRequest, own);
  });
}

describe("the probe's data-plane requests against E2B's SDK, per envd version", () => {
  let sim: Simulator;
  let clock: FakeClock;
  let control: ControlClient;

  beforeAll(async () => {
    ({ sim, clock } = await startSdkSimulator());
    control = testControl({
      apiUrl: sim.apiUrl,
      apiKey: SDK_API_KEY,
      apiPrefix: "",
      flavor: "e2b",
      clock,
    });
  });
  afterAll(async () => {
    await control?.close();
    await sim?.close();
  });

  /** A DataClient that dials `port` on loopback, in plain HTTP. */
  function dataClient(port: number, routing: DataPlaneRouting): DataClient {
    return new Data({
      sandboxDomain: sim.domain,
      proxyScheme: "http",
      proxyNodeIp: "127.0.0.1",
      proxyPortHttp: port,
      agentPort: ENVD_PORT,
      timeoutMs: 5_000,
      routing,
    });
  }

  /** One probe of the template on envd `version`; sleeps between state reads end at once. */
  async function probe(
    version: string,
    data: DataClient,
    steps: ProbeStep[],
  ): Promise<ProbeResult> {
    const settings: ProbeSettings = {
      template: templateOn(sim, version),
      command: "echo {nonce}",
      filePath: FILE_PATH,
      metadata: { suite: "client-vs-sdk" },
      sandboxTtlS: 120,
      steps,
      lifecycleRounds: 2,
      statePollMs: 10,
    };
    let nonce = 0;
    return runProbe(
      {
        control,
        data,
        clock,
        monotonic: () => performance.now(),
        nonce: () => `n${version.replaceAll(".", "")}x${++nonce}`,
        sleep: async () => undefined,
      },
      settings,
      { phaseTimeoutMs: 5_000, totalTimeoutMs: 20_000 },
    );
  }

  /** What the SDK sends for commands.run, files.write and files.read on envd `version`. */
  async function sdkRequests(version: string) {
    const recorder = await startWireRecorder(sim.dataPort);
    try {
      const sbx = await Sandbox.create(templateOn(sim, version), {
        ...sdkOpts(sim),
        sandboxUrl: recorder.url,
      });
      expect((await sbx.commands.run("echo sdk")).stdout).toBe("sdk\n");
      await sbx.files.write(FILE_PATH, "sdk\n");
      expect(await sbx.files.read(FILE_PATH)).toBe("sdk\n");
      await sbx.kill();
      return agentCalls(recorder.requests, sbx.sandboxId);
    } finally {
      await recorder.close();
    }
  }

  /** What the probe sends for exec, file_write and file_read on envd `version`. */
  async function probeRequests(version: string, routing: DataPlaneRouting) {
    const recorder = await startWireRecorder(sim.dataPort);
    const data = dataClient(recorder.port, routing);
    try {
      const result = await probe(version, data, ["exec", "file"]);
      expect(result.failures).toEqual([]);
      return { calls: agentCalls(recorder.requests, result.sandboxId ?? ""), recorder };
    } finally {
      await data.close();
      await recorder.close();
    }
  }

  it.each(ENVD_VERSION_MIX)(
    "sends what the SDK sends to envd %s, routed by headers as the SDK routes",
    async (version) => {
      const sdk = await sdkRequests(version);
      const { calls: ours } = await probeRequests(version, "headers");
      expect(ours).toEqual(sdk);
      // Spelled out, so a change of the SDK cannot make both wrong together.
      const old = version.startsWith("0.2.") || version.startsWith("0.3.");
      const [start, write, read] = ours;
      expect(start?.authorization).toBe(
        old ? `Basic ${Buffer.from("user:").toString("base64")}` : null,
      );
      expect(write?.username).toBe(old ? "user" : null);
      expect(read?.username).toBe(old ? "user" : null);
      expect(write).toMatchObject({ contentType: "multipart/form-data", parts: ["file"] });
      for (const c of ours) expect(c).toMatchObject({ accessToken: true, routedTo: "own sandbox" });
    },
  );

  it.each(ENVD_VERSION_MIX)(
    "names the sandbox by its host name on envd %s unless routing by headers",
    async (version) => {
      const { calls, recorder } = await probeRequests(version, "host");
      for (const c of calls) expect(c).toMatchObject({ routedTo: undefined, routedPort: null });
      for (const r of recorder.requests)
        expect(r.headers.host).toMatch(
          new RegExp(`^${ENVD_PORT}-[a-z0-9]+\\.sandbox\\.test(:\\d+)?$`),
        );
    },
  );

  it.each(ENVD_VERSION_MIX)(
    "passes a whole probe (exec, file, two pause/resume rounds) on envd %s",
    async (version) => {
      for (const routing of ["host", "headers"] as const) {
        const data = dataClient(sim.dataPort, routing);
        try {
          const result = await probe(version, data, ["exec", "file", "lifecycle"]);
          expect(result.failures, routing).toEqual([]);
          expect(result.rounds).toHaveLength(2);
          expect(sim.state.sandbox(result.sandboxId ?? "")).toBeUndefined();
        } finally {
          await data.close();
        }
      }
    },
  );
});
