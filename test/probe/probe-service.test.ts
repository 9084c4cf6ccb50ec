import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PROBE_TAG_KEY } from "../../src/platform/types.js";
import { PROBE_MODULE_KEY } from "../../src/probe/orphan-sweep.js";
import {
  type ModuleOptions,
  ProbeService,
  type ProbeServiceOptions,
} from "../../src/probe/probe-service.js";
import type { RouteHandler } from "../../src/util/route.js";
import {
  INSTANCE,
  type ProbeBed,
  probeBed,
  probeSandboxes,
  seriesValue,
  stepDefaults,
} from "./setup.js";

let bed: ProbeBed;
let server: Server;
let base: string;
let handler: RouteHandler;

beforeAll(async () => {
  bed = await probeBed();
  server = createServer((req, res) => {
    void handler(req, new URL(req.url ?? "/", "http://x"), res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(() => {
  bed.sim.faults.clear();
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await bed.close();
});

function module(name: string, extra: Partial<ModuleOptions> = {}): ModuleOptions {
  return {
    module: name,
    template: bed.template,
    schedule: null,
    command: "echo {nonce}",
    filePath: "/tmp/probe.txt",
    phaseTimeoutMs: 5_000,
    totalTimeoutMs: 10_000,
    ...stepDefaults(),
    ...extra,
  };
}

function service(
  modules: ModuleOptions[],
  extra: Partial<ProbeServiceOptions> = {},
): { probes: ProbeService; registry: Registry } {
  const registry = new Registry();
  const probes = new ProbeService({
    control: bed.control,
    data: bed.data,
    registry,
    clock: bed.clock,
    namespace: "sandbox",
    instance: INSTANCE,
    runAtStart: false,
    concurrency: 2,
    modules,
    ...extra,
  });
  handler = probes.routes()[0]!.handler;
  return { probes, registry };
}

describe("probe modules", () => {
  it("labels every series with its module, template and the module's own labels", async () => {
    const { probes, registry } = service([
      module("quick", { labels: { team: "sre" } }),
      module("files", { labels: { tier: "gold" }, steps: ["file"] }),
    ]);
    await probes.runOnce("quick");
    await probes.runOnce("files");
    const quick = { module: "quick", template: bed.template, team: "sre", tier: "" };
    const files = { module: "files", template: bed.template, team: "", tier: "gold" };
    expect(await seriesValue(registry, "sandbox_probe_success", quick)).toBe(1);
    expect(await seriesValue(registry, "sandbox_probe_success", files)).toBe(1);
    // Each module's last-run phases are its own: the file-only module ran no exec.
    const exec = (id: object) =>
      seriesValue(registry, "sandbox_probe_phase_duration_seconds", { ...id, phase: "exec" });
    expect(await exec(quick)).toBeGreaterThan(0);
    expect(await exec(files)).toBeUndefined();
    expect(
      await seriesValue(registry, "sandbox_probe_runs_total", { ...files, result: "success" }),
    ).toBe(1);
    expect(probes.status().modules.map((m) => [m.module, m.runs])).toEqual([
      ["quick", 1],
      ["files", 1],
    ]);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("runs no more modules at once than the concurrency allows", async () => {
    const most = async (concurrency: number): Promise<number> => {
      let peak = 0;
      const onPhase = () => {
        peak = Math.max(peak, probeSandboxes(bed.sim).length);
      };
      bed.sim.faults.stream = { firstDataDelayMs: 20 };
      const { probes } = service([module("a"), module("b"), module("c")], {
        concurrency,
        onPhase,
      });
      const results = await Promise.all(probes.probers.map((p) => p.runOnce()));
      expect(results.every((r) => r?.success)).toBe(true);
      return peak;
    };
    expect(await most(1)).toBe(1);
    expect(await most(3)).toBeGreaterThan(1);
  });

  it("sweeps every module's old probe sandboxes, paused ones included, counted by module", async () => {
    const { probes, registry } = service([module("a"), module("b")]);
    const old = bed.clock.now() - 60_000;
    const tagged = (m: string, state: "running" | "paused") =>
      bed.sim.state.addSandbox({
        metadata: { [PROBE_TAG_KEY]: INSTANCE, [PROBE_MODULE_KEY]: m },
        startedAt: old,
        state,
        templateID: bed.template,
      }).sandboxID;
    const ids = [tagged("a", "running"), tagged("b", "paused"), tagged("gone", "running")];
    expect(await probes.sweepOrphans()).toBe(3);
    expect(ids.filter((id) => bed.sim.state.sandboxes.has(id))).toEqual([]);
    const count = (m: string) =>
      seriesValue(registry, "sandbox_probe_orphans_deleted_total", { module: m });
    expect([await count("a"), await count("b"), await count("gone")]).toEqual([1, 1, 1]);
    expect(probes.status().lastSweep).toMatchObject({ deleted: 3, error: null });
  });
});

describe("GET /probe?module=", () => {
  it("runs the named module and refuses an unknown or missing one, naming the modules", async () => {
    service([module("quick"), module("files", { steps: ["file"] })], {
      onDemandMinIntervalMs: 0,
    });
    const res = await fetch(`${base}/probe?module=files`);
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toMatch(/^sandbox_probe_success\{module="files",template="[^"]+"\} 1$/m);
    expect(body).not.toContain('module="quick"');
    expect(body).not.toContain('phase="exec"');

    for (const query of ["?module=nope", ""]) {
      const bad = await fetch(`${base}/probe${query}`);
      expect(bad.status).toBe(400);
      expect(await bad.text()).toContain("modules: quick, files");
    }
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("caps the run by X-Prometheus-Scrape-Timeout-Seconds, less half a second", async () => {
    const { probes } = service([
      module("slow", { totalTimeoutMs: 30_000, phaseTimeoutMs: 30_000 }),
    ]);
    bed.sim.faults.stream = { firstDataDelayMs: 60_000 };
    // A 3.5 s cap, far below the module's 30 s and the 60 s stream: the cap ends the run, and
    // create has seconds for itself on a loaded machine.
    const res = await fetch(`${base}/probe?module=slow`, {
      headers: { "X-Prometheus-Scrape-Timeout-Seconds": "4" },
    });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toMatch(/sandbox_probe_success\{[^}]*\} 0$/m);
    expect(body).toMatch(/phase="exec",reason="timeout"\} 1$/m);
    await probes.idle();
    expect(probeSandboxes(bed.sim)).toEqual([]);

    const bad = await fetch(`${base}/probe?module=slow`, {
      headers: { "X-Prometheus-Scrape-Timeout-Seconds": "soon" },
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("X-Prometheus-Scrape-Timeout-Seconds");
  });

  it("answers debug=true with a readable trace of every call, phase and stream event", async () => {
    const { probes, registry } = service([module("quick")]);
    const res = await fetch(`${base}/probe?module=quick&debug=true`, {
      headers: { "X-Prometheus-Scrape-Timeout-Seconds": "10" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const trace = await res.text();
    const lines = trace.split("\n");
    const firstIndex = (re: RegExp) => lines.findIndex((l) => re.test(l));
    // In order: create, the exec stream with its events, the file round trip, then the answer
    // (terminate runs on after it).
    const order = [
      /Timeout: 9500 ms \(the scrape timeout less 0.5 s\)/,
      /phase create$/,
      /control\.createSandbox\(.*\) -> ok after [\d.]+ ms/,
      /phase exec$/,
      /data\.startProcess\(\{id: ".+"\}.*stream opened/,
      /stream event start/,
      /stream event data/,
      /stream event end \(exit 0\)/,
      /data\.writeFile\(/,
      /data\.readFile\(/,
      /answer sent; terminate runs on/,
      /^Result: success$/,
      /^Stream first_data: [\d.]+ ms$/,
      /^Terminate: still running after this answer/,
    ].map(firstIndex);
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(trace).not.toContain("sandbox_probe_success");
    // A debug run is not a scheduled run: the shared series are untouched.
    expect(await seriesValue(registry, "sandbox_probe_runs_total", { result: "success" })).toBe(0);
    await probes.idle();
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("shows in the trace why a run failed", async () => {
    service([module("quick")]);
    bed.sim.faults.createFails = 503;
    const trace = await (await fetch(`${base}/probe?module=quick&debug=true`)).text();
    expect(trace).toMatch(/control\.createSandbox\(.*\) -> HTTP 503 /);
    expect(trace).toMatch(/^Failed create \(http_status\): /m);
    expect(trace).toMatch(/^Result: failure$/m);
  });
});
