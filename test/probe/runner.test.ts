import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PROBE_MODULE_KEY } from "../../src/probe/orphan-sweep.js";
import { STREAM_POINTS } from "../../src/probe/phase.js";
import { PROBE_PHASES } from "../../src/probe/probe-steps.js";
import { MAX_TIMER_MS } from "../../src/util/duration.js";
import {
  INSTANCE,
  type ProbeBed,
  probeBed,
  proberFor,
  probeSandboxes,
  seriesValue,
} from "./setup.js";

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

describe("a probe against the simulator", () => {
  it("passes every phase and exports every phase, stream point and run metric", async () => {
    const { prober, registry } = proberFor(bed, { steps: ["exec", "file", "lifecycle"] });
    const result = await prober.runOnce();
    expect(result?.failures).toEqual([]);
    expect(result?.success).toBe(true);
    expect(Object.keys(result?.phases ?? {}).sort()).toEqual(
      PROBE_PHASES.filter((p) => !/^(autopause|autoresume|http)_/.test(p)).sort(),
    );
    expect(await seriesValue(registry, "sandbox_probe_success")).toBe(1);
    for (const phase of PROBE_PHASES.filter((p) => !/^(autopause|autoresume|http)_/.test(p))) {
      expect(
        await seriesValue(registry, "sandbox_probe_phase_duration_seconds", { phase }),
      ).toBeGreaterThan(0);
      // Each of the two lifecycle rounds is observed.
      const observed = ["pause", "resume", "state_check"].includes(phase) ? 2 : 1;
      expect(await seriesValue(registry, "sandbox_probe_duration_seconds_count", { phase })).toBe(
        observed,
      );
    }
    for (const point of STREAM_POINTS) {
      expect(
        await seriesValue(registry, "sandbox_probe_stream_seconds", { point }),
      ).toBeGreaterThan(0);
      expect(
        await seriesValue(registry, "sandbox_probe_stream_latency_seconds_count", { point }),
      ).toBe(1);
    }
    expect(await seriesValue(registry, "sandbox_probe_keepalives")).toBe(0);
    expect(await seriesValue(registry, "sandbox_probe_runs_total", { result: "success" })).toBe(1);
    expect(await seriesValue(registry, "sandbox_probe_runs_total", { result: "failure" })).toBe(0);
    expect(await seriesValue(registry, "sandbox_probe_last_run_timestamp_seconds")).toBe(
      bed.clock.now() / 1000,
    );
    expect(await seriesValue(registry, "sandbox_probe_orphans_deleted_total")).toBe(0);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("creates the sandbox with the instance tag and the configured template", async () => {
    const created: Array<Record<string, string>> = [];
    const { prober } = proberFor(bed, {
      control: {
        ...bindControl(bed),
        createSandbox: async (req) => {
          created.push({ template: req.templateId, ...req.metadata });
          return bed.control.createSandbox(req);
        },
      },
    });
    expect((await prober.runOnce())?.success).toBe(true);
    expect(created).toEqual([
      { template: bed.template, "sandbox-exporter/probe": INSTANCE, [PROBE_MODULE_KEY]: "default" },
    ]);
  });

  it("times the stream points from the request and counts keepalives", async () => {
    // 20 keepalive intervals between start and end: at least 3 arrive on a loaded machine too.
    bed.sim.faults.stream = { startDelayMs: 50, endDelayMs: 400, keepaliveIntervalMs: 20 };
    const { prober } = proberFor(bed);
    const r = (await prober.runOnce())!;
    expect(r.success).toBe(true);
    const p = r.stream.points;
    // The agent sends start 50 ms and end 450 ms after the request arrives, which is after we sent it.
    expect(p.start).toBeGreaterThanOrEqual(0.05);
    expect(p.end).toBeGreaterThanOrEqual(0.45);
    expect(p.end).toBeLessThan(2);
    expect(p.first_envelope).toBeLessThanOrEqual(p.start!);
    expect(p.first_data).toBeGreaterThanOrEqual(p.start!);
    expect(p.end).toBeGreaterThanOrEqual(p.first_data!);
    expect(r.stream.keepalives).toBeGreaterThanOrEqual(3);
  });

  it("reads stream timings from the injected monotonic clock", async () => {
    let t = 0;
    // Every reading advances 10 ms, so each stream point is an exact multiple of 10 ms.
    const { prober } = proberFor(bed, { monotonic: () => (t += 10) });
    const r = (await prober.runOnce())!;
    for (const point of STREAM_POINTS) {
      const ms = Math.round(r.stream.points[point]! * 1000);
      expect(ms % 10).toBe(0);
      expect(ms).toBeGreaterThan(0);
    }
  });
});

describe("a failure in each phase", () => {
  const cases: Array<{
    name: string;
    phase: string;
    reason: string;
    inject: (b: ProbeBed) => void;
    options?: Parameters<typeof proberFor>[1];
  }> = [
    {
      name: "an error status on create",
      phase: "create",
      reason: "http_status",
      inject: (b) => {
        b.sim.faults.createFails = 503;
      },
    },
    {
      name: "a malformed envelope stream",
      phase: "exec",
      reason: "malformed_stream",
      inject: (b) => {
        b.sim.faults.stream = { malformedEnvelope: true };
      },
    },
    {
      name: "wrong stdout",
      phase: "exec",
      reason: "wrong_output",
      inject: (b) => {
        b.sim.faults.stream = { wrongStdout: true };
      },
    },
    {
      name: "a non-zero exit code",
      phase: "exec",
      reason: "exit_code",
      inject: () => undefined,
      options: { command: "echo {nonce}; exit 3" },
    },
    {
      name: "a stream slower than the exec phase timeout",
      phase: "exec",
      reason: "timeout",
      inject: (b) => {
        b.sim.faults.stream = { startDelayMs: 5_000 };
      },
      options: { phaseTimeouts: { exec: 150 } },
    },
    {
      // Connect-Timeout-Ms carries the phase's limit: the agent may reach it before our timer.
      name: "the agent's deadline_exceeded (our Connect-Timeout-Ms expired on its clock first)",
      phase: "exec",
      reason: "timeout",
      inject: (b) => {
        b.sim.faults.stream = {
          endStreamError: { code: "deadline_exceeded", message: "the operation timed out" },
        };
      },
    },
    {
      name: "an end-of-stream error",
      phase: "exec",
      reason: "end_stream_error",
      inject: (b) => {
        b.sim.faults.stream = { endStreamError: { code: "internal", message: "agent crashed" } };
      },
    },
    {
      name: "a stream closed without its end-of-stream frame",
      phase: "exec",
      reason: "truncated",
      inject: (b) => {
        b.sim.faults.stream = { truncate: true };
      },
    },
    {
      name: "an error status on file write",
      phase: "file_write",
      reason: "http_status",
      inject: (b) => b.sim.faults.route("POST /files", { status: 500 }),
    },
    {
      name: "a file read back with other content",
      phase: "file_read",
      reason: "mismatch",
      inject: (b) => b.sim.faults.route("GET /files", { malformed: true }),
    },
  ];

  for (const c of cases) {
    it(`reports ${c.phase}/${c.reason} for ${c.name} and leaves no sandbox`, async () => {
      c.inject(bed);
      const { prober, registry } = proberFor(bed, c.options);
      const r = (await prober.runOnce())!;
      expect(r.success).toBe(false);
      expect(r.failures.map((f) => [f.phase, f.reason])).toEqual([[c.phase, c.reason]]);
      expect(await seriesValue(registry, "sandbox_probe_success")).toBe(0);
      expect(
        await seriesValue(registry, "sandbox_probe_failures_total", {
          phase: c.phase,
          reason: c.reason,
        }),
      ).toBe(1);
      expect(await seriesValue(registry, "sandbox_probe_runs_total", { result: "failure" })).toBe(
        1,
      );
      // Terminate ran although an earlier phase failed.
      expect(r.phases.terminate).toBeDefined();
      expect(r.leftBehind).toBeUndefined();
      expect(probeSandboxes(bed.sim)).toEqual([]);
      const status = prober.status();
      expect(status.recentFailures[0]).toMatchObject({ phase: c.phase, reason: c.reason });
      expect(status.recentFailures[0]?.error).not.toBe("");
    });
  }

  it("deletes a sandbox whose create answered after the total timeout", async () => {
    bed.sim.faults.route("POST /sandboxes", { latencyMs: 400 });
    const { prober } = proberFor(bed, { totalTimeoutMs: 100 });
    const r = (await prober.runOnce())!;
    expect(r.failures.map((f) => [f.phase, f.reason])).toEqual([["create", "timeout"]]);
    expect(r.failures[0]?.message).toContain("total timeout");
    expect(r.sandboxId).toBeDefined();
    expect(bed.sim.counters.get("DELETE /sandboxes/{id}")).toBeGreaterThan(0);
    expect(probeSandboxes(bed.sim)).toEqual([]);
  });

  it("reports a failed delete as terminate/http_status and leaves the sandbox to the sweep", async () => {
    bed.sim.faults.deleteFails = 500;
    const { prober, registry } = proberFor(bed);
    const r = (await prober.runOnce())!;
    expect(r.failures.map((f) => [f.phase, f.reason])).toEqual([["terminate", "http_status"]]);
    expect(r.leftBehind).toBe(r.sandboxId);
    expect(probeSandboxes(bed.sim)).toEqual([r.sandboxId]);

    bed.sim.faults.clear();
    // Young: it might still belong to a probe in flight.
    expect(await prober.sweepOrphans()).toBe(0);
    bed.clock.advance(10_001);
    expect(await prober.sweepOrphans()).toBe(1);
    expect(probeSandboxes(bed.sim)).toEqual([]);
    expect(await seriesValue(registry, "sandbox_probe_orphans_deleted_total")).toBe(1);
  });

  it("reports not_deleted when the sandbox is still there after DELETE", async () => {
    const { prober } = proberFor(bed, {
      control: { ...bindControl(bed), deleteSandbox: async () => undefined },
    });
    const r = (await prober.runOnce())!;
    expect(r.failures.map((f) => [f.phase, f.reason])).toEqual([["terminate", "not_deleted"]]);
    expect(r.leftBehind).toBeDefined();
    await bed.control.deleteSandbox(r.leftBehind!);
  });

  it("keeps only the last phase values of a failed run, not stale ones of an earlier pass", async () => {
    const { prober, registry } = proberFor(bed);
    await prober.runOnce();
    bed.sim.faults.createFails = 500;
    await prober.runOnce();
    const phase = "sandbox_probe_phase_duration_seconds";
    expect(await seriesValue(registry, phase, { phase: "create" })).toBeDefined();
    expect(await seriesValue(registry, phase, { phase: "exec" })).toBeUndefined();
    expect(
      await seriesValue(registry, "sandbox_probe_stream_seconds", { point: "end" }),
    ).toBeUndefined();
    expect(
      await seriesValue(registry, "sandbox_probe_duration_seconds_count", { phase: "exec" }),
    ).toBe(1);
  });
});

/** The bed's control client as a plain object whose methods may be replaced. */
function bindControl(b: ProbeBed) {
  const c = b.control;
  return {
    createSandbox: c.createSandbox.bind(c),
    getSandbox: c.getSandbox.bind(c),
    deleteSandbox: c.deleteSandbox.bind(c),
    listSandboxes: c.listSandboxes.bind(c),
    pauseSandbox: c.pauseSandbox.bind(c),
    resumeSandbox: c.resumeSandbox.bind(c),
  };
}

describe("probe time limits", () => {
  it("hands every timer a whole number of ms, whatever the timeouts and a fractional clock", async () => {
    // Small limits make phases time out (that is their job); none may fail for any other reason.
    const ms = fc.oneof(
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 50, max: 60_000 }),
      fc.integer({ min: 60_000, max: MAX_TIMER_MS }),
    );
    await fc.assert(
      fc.asyncProperty(
        ms,
        ms,
        fc.double({ min: 0.001, max: 0.999, noNaN: true }),
        async (total, phase, frac) => {
          const { prober } = proberFor(bed, {
            totalTimeoutMs: total,
            phaseTimeoutMs: phase,
            monotonic: () => performance.now() + frac,
          });
          const r = (await prober.runOnce())!;
          for (const f of r.failures) {
            expect(f.reason, f.message).toBe("timeout");
            expect(f.message).not.toMatch(/out of range|must be an integer/);
          }
          if (total > 5_000 && phase > 5_000) expect(r.failures).toEqual([]);
          if (!r.failures.some((f) => f.phase === "terminate"))
            expect(r.leftBehind).toBeUndefined();
          // Leftovers of a timed-out terminate belong to the orphan sweep, tested elsewhere.
          for (const id of probeSandboxes(bed.sim)) bed.sim.state.sandboxes.delete(id);
        },
      ),
      { numRuns: 40 },
    );
  });
});
