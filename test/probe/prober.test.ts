import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TimedEvent } from "../../src/platform/data/data.js";
import type { ProbeData } from "../../src/probe/phase.js";
import { ProbeConfigError } from "../../src/probe/prober.js";
import type { RouteHandler } from "../../src/util/route.js";
import { parseSchedule } from "../../src/util/schedule.js";
import { type ProbeBed, probeBed, proberFor, probeSandboxes, seriesValue } from "./setup.js";

let bed: ProbeBed;
beforeAll(async () => {
  bed = await probeBed();
});
afterEach(() => {
  bed.sim.faults.clear();
});
afterAll(async () => {
  await bed.close();
});

/** A data client that resolves `live` when the first stream event arrives. */
function watchedData(): { data: ProbeData; live: Promise<void> } {
  let resolve!: () => void;
  const live = new Promise<void>((r) => {
    resolve = r;
  });
  const real = bed.data;
  const data: ProbeData = {
    readFile: real.readFile.bind(real),
    writeFile: real.writeFile.bind(real),
    requestPort: real.requestPort.bind(real),
    async *startProcess(...args: Parameters<ProbeData["startProcess"]>) {
      for await (const e of real.startProcess(...args) as AsyncGenerator<TimedEvent>) {
        resolve();
        yield e;
      }
    },
  };
  return { data, live };
}

describe("Prober", () => {
  it("stop() mid-probe aborts the stream and deletes the sandbox before it resolves", async () => {
    bed.sim.faults.stream = { firstDataDelayMs: 30_000 };
    const { data, live } = watchedData();
    const { prober } = proberFor(bed, { data });
    const running = prober.runOnce();
    await live;
    expect(probeSandboxes(bed.sim)).toHaveLength(1);
    await prober.stop();
    expect(probeSandboxes(bed.sim)).toEqual([]);
    const r = (await running)!;
    expect(r.failures.map((f) => [f.phase, f.reason])).toEqual([["exec", "aborted"]]);
    expect(await prober.runOnce()).toBeUndefined();
  });

  it("neither counts nor warns of a run stop() cut short: a shutdown is no probe failure", async () => {
    bed.sim.faults.stream = { firstDataDelayMs: 30_000 };
    const { data, live } = watchedData();
    const lines: Array<{ level: string; msg: string }> = [];
    const logger = {
      debug: (_o: object, msg: string) => lines.push({ level: "debug", msg }),
      info: (_o: object, msg: string) => lines.push({ level: "info", msg }),
      warn: (_o: object, msg: string) => lines.push({ level: "warn", msg }),
    };
    const { prober, registry } = proberFor(bed, { data, logger });
    const running = prober.runOnce();
    await live;
    await prober.stop();
    expect((await running)?.failures.map((f) => f.reason)).toEqual(["aborted"]);
    expect(lines.filter((l) => l.level === "warn")).toEqual([]);
    expect(lines).toContainEqual({ level: "info", msg: "probe cut short by shutdown" });
    const runs = await seriesValue(registry, "sandbox_probe_runs_total", { result: "failure" });
    expect(runs ?? 0).toBe(0);
  });

  it("never runs two probes at once: a run during another is skipped and counted", async () => {
    bed.sim.faults.stream = { firstDataDelayMs: 100 };
    const { data, live } = watchedData();
    const { prober } = proberFor(bed, { data });
    const first = prober.runOnce();
    await live;
    expect(await prober.runOnce()).toBeUndefined();
    expect(await prober.runOnDemand()).toBeUndefined();
    expect((await first)?.success).toBe(true);
    expect(prober.status()).toMatchObject({ runs: 1, skipped: 1, inFlight: false });
  });

  it("keeps the last failures newest first in status()", async () => {
    const { prober } = proberFor(bed, { failureHistory: 2 });
    bed.sim.faults.createFails = 500;
    await prober.runOnce();
    bed.sim.faults.createFails = undefined;
    bed.sim.faults.stream = { wrongStdout: true };
    await prober.runOnce();
    bed.sim.faults.stream = { truncate: true };
    await prober.runOnce();
    const s = prober.status();
    expect(s.recentFailures.map((f) => f.reason)).toEqual(["truncated", "wrong_output"]);
    expect(s.recentFailures[0]).toMatchObject({ phase: "exec", source: "schedule" });
    expect(s.lastRun?.success).toBe(false);
  });

  it("sweeps again before every Nth run", async () => {
    const { prober } = proberFor(bed, { sweepEveryRuns: 2 });
    await prober.runOnce();
    expect(prober.status().lastSweep).toBeNull();
    await prober.runOnce();
    expect(prober.status().lastSweep).not.toBeNull();
  });

  it("refuses a command without {nonce}", () => {
    expect(() => proberFor(bed, { command: "echo hello" })).toThrow(ProbeConfigError);
  });

  it("shows its schedule in status() as written", () => {
    expect(proberFor(bed).prober.status().schedule).toBeNull();
    const { prober } = proberFor(bed, { schedule: parseSchedule("*/20 * * * * *") });
    expect(prober.status().schedule).toBe("*/20 * * * * *");
  });

  it("holds the schedule's first tick an interval behind the start-up run, so that run is not skipped", async () => {
    bed.sim.faults.stream = { firstDataDelayMs: 30_000 };
    const { data, live } = watchedData();
    const { prober } = proberFor(bed, { data, schedule: parseSchedule("10s"), runAtStart: true });
    const started = Date.now();
    await prober.start();
    await live;
    // croner ticks on whole seconds: the first at or after an interval less half a second.
    const next = Date.parse(prober.status().nextRun ?? "");
    expect(next - started).toBeGreaterThanOrEqual(9_000);
    expect(prober.status()).toMatchObject({ runs: 1, skipped: 0, inFlight: true });
    await prober.stop();
    expect(prober.status().nextRun).toBeNull();
    // Without a start-up run the first tick is the schedule's own, within a second.
    const { prober: later } = proberFor(bed, { data, schedule: parseSchedule("10s") });
    await later.start();
    expect(Date.parse(later.status().nextRun ?? "") - Date.now()).toBeLessThanOrEqual(1_000);
    await later.stop();
  });

  it("does nothing on start when disabled", async () => {
    const { prober } = proberFor(bed, { enabled: false });
    await prober.start();
    expect(prober.status()).toMatchObject({ enabled: false, runs: 0, lastSweep: null });
  });
});

describe("GET /probe", () => {
  let server: Server;
  let base: string;
  let handler: RouteHandler;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      void handler(req, url, res);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it("answers with the metrics of its own probe only, and 429 when called too fast", async () => {
    const { prober, registry } = proberFor(bed, { onDemandMinIntervalMs: 5_000 });
    handler = prober.routes()[0]!.handler;
    const res = await fetch(`${base}/probe`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toMatch(/^sandbox_probe_success\{module="default",template="[^"]+"\} 1$/m);
    // Answered before terminate, which runs on: its duration is not in the answer.
    expect(text).toMatch(
      /^sandbox_probe_phase_duration_seconds\{module="default",template="[^"]+",phase="file_read"\} /m,
    );
    expect(text).not.toContain('phase="terminate"} ');
    expect(text).toMatch(
      /^sandbox_probe_stream_seconds\{module="default",template="[^"]+",point="end"\} /m,
    );
    // One probe, not history: no run counters or histograms.
    expect(text).not.toContain("sandbox_probe_runs_total");
    expect(text).not.toContain("_bucket");
    // The shared registry is the schedule's; an on-demand probe leaves it alone.
    expect(await seriesValue(registry, "sandbox_probe_runs_total", { result: "success" })).toBe(0);
    await prober.idle();
    expect(probeSandboxes(bed.sim)).toEqual([]);

    bed.clock.advance(4_999);
    const limited = await fetch(`${base}/probe`);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("1");
    await limited.text();

    bed.clock.advance(1);
    bed.sim.faults.stream = { wrongStdout: true };
    const failed = await fetch(`${base}/probe`);
    expect(failed.status).toBe(200);
    const body = await failed.text();
    expect(body).toMatch(/^sandbox_probe_success\{module="default",template="[^"]+"\} 0$/m);
    expect(body).toMatch(
      /^sandbox_probe_failures_total\{module="default",template="[^"]+",phase="exec",reason="wrong_output"\} 1$/m,
    );
    expect(prober.status().recentFailures[0]).toMatchObject({ source: "on_demand" });
  });

  it("refuses other methods", async () => {
    const { prober } = proberFor(bed);
    handler = prober.routes()[0]!.handler;
    const res = await fetch(`${base}/probe`, { method: "POST" });
    expect(res.status).toBe(405);
    await res.text();
  });
});
