// platform.dataPlaneRouting end to end: the setting read from a flag or the environment, and the
// exporter's probe reaching every sandbox through `sandbox.{domain}` with E2B's routing headers.
import { afterEach, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import { ConfigError } from "../../src/config/load.js";
import { dataPlaneFlags, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { exporterFor } from "../helpers/exporter.js";
import { startWireRecorder, type WireRecorder } from "../sdk/wire-recorder.js";

let sim: Simulator | undefined;
let recorder: WireRecorder | undefined;
let exporter: Exporter | undefined;

afterEach(async () => {
  await exporter?.stop();
  await recorder?.close();
  await sim?.close();
  exporter = undefined;
  recorder = undefined;
  sim = undefined;
});

describe("platform.dataPlaneRouting", () => {
  it("is host by default, and headers from --data-plane-routing or its environment variable", () => {
    const load = (argv: string[], env: Record<string, string> = {}) =>
      loadConfig({ argv, env: { SANDBOX_API_URL: "http://127.0.0.1:1", ...env } }).config.platform
        .dataPlaneRouting;
    expect(load([])).toBe("host");
    expect(load(["--data-plane-routing", "headers"])).toBe("headers");
    expect(load([], { SANDBOX_EXPORTER_DATA_PLANE_ROUTING: "headers" })).toBe("headers");
    expect(() => load(["--data-plane-routing", "dns"])).toThrow(ConfigError);
  });

  it("probes every sandbox through sandbox.{domain} with E2b-Sandbox-Id and -Port", async () => {
    sim = await startSimulator({ sandboxes: 2 });
    recorder = await startWireRecorder(sim.dataPort);
    const template = sim.state.templates.find((t) => t.status === "ready")!.templateID;
    exporter = await exporterFor(sim, [
      "--probe",
      "--probe-template",
      template,
      ...dataPlaneFlags(recorder.port),
      "--data-plane-routing",
      "headers",
    ]);
    const result = await exporter.prober!.runOnce();
    expect(result?.failures).toEqual([]);
    const calls = recorder.requests.map((r) => `${r.method} ${r.path}`);
    expect(calls).toContain("POST /process.Process/Start");
    expect(calls).toContain("POST /files");
    expect(calls).toContain("GET /files");
    for (const r of recorder.requests) {
      expect(r.headers.host).toBe(`sandbox.${sim.domain}`);
      expect(r.headers["e2b-sandbox-id"]).toBe(result?.sandboxId);
      expect(r.headers["e2b-sandbox-port"]).toBe("49983");
    }
  });
});
