// The probe's data plane turned hostile (the agent's Connect stream), and a DELETE that fails for
// a while: every probe fails on the right phase with a reason, and no probe sandbox outlives it.

import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { sampleOf } from "../../tools/exposition.js";
import { promtoolReady } from "../helpers/promtool.js";
import { expectHealthyAndSealed, scrapeSamples } from "./checks.js";
import { type Fault, gzipMember } from "./faults.js";
import { type Rig, rssMb, startRig, statusOf } from "./harness.js";

/** The whole probe's limit: an exec that never ends is cut this fast. */
const PROBE_TIMEOUT = "3s";
const HOUR_MS = 3_600_000;

let rig: Rig | undefined;

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
  gzipMember();
}, 90_000);

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

async function probeRig(): Promise<{ r: Rig; rss: number }> {
  rig = await startRig({ argv: ["--probe", "--probe-timeout", PROBE_TIMEOUT] });
  const rss = rssMb();
  await rig.e.runCycle();
  return { r: rig, rss };
}

/** Every sandbox the probe created was deleted, and none tagged as a probe is alive. */
function expectNoProbeSandboxLeft(r: Rig): void {
  expect.soft(r.up.created.length, "probe sandboxes created").toBeGreaterThan(0);
  const undeleted = r.up.created.filter((id) => !r.up.deleted.includes(id));
  expect.soft(undeleted, "created but never deleted").toEqual([]);
  expect.soft(r.up.probeSandboxes(), "probe sandboxes still alive").toEqual([]);
}

const STREAM_FAULTS: Array<{ name: string; fault: Fault; reason: string }> = [
  {
    name: "an envelope length prefix of 0xFFFFFFFF",
    fault: { kind: "envelopeHugeLength" },
    reason: "malformed_stream",
  },
  {
    name: "a gzip-bomb frame (64 MiB of zeros, compressed flag)",
    fault: { kind: "envelopeGzipBomb" },
    reason: "malformed_stream",
  },
  {
    name: "endless keepalives and never an end",
    fault: { kind: "endlessKeepalives", everyMs: 20 },
    reason: "timeout",
  },
  {
    name: "a missing end-of-stream frame",
    fault: { kind: "noEndOfStream" },
    reason: "truncated",
  },
];

describe("chaos: a hostile in-sandbox agent", () => {
  it("passes a probe against the well-behaved agent (the harness works)", async () => {
    const { r } = await probeRig();
    const result = await r.e.prober?.runOnce();
    expect(result?.failures, JSON.stringify(result?.failures)).toEqual([]);
    expect(result?.success).toBe(true);
    expectNoProbeSandboxLeft(r);
    expect(r.up.count("POST /process.Process/Start")).toBe(1);
    expect(r.up.count("POST /files")).toBe(1);
    expect(r.up.count("GET /files")).toBe(1);
  });

  it.each(STREAM_FAULTS)(
    "fails the exec phase on $name ($reason) and deletes the sandbox",
    async (c) => {
      const { r, rss } = await probeRig();
      r.up.fault("POST /process.Process/Start", c.fault);
      const result = await r.e.prober?.runOnce();
      expect(result, "runOnce resolved with a result").toBeDefined();
      expect.soft(result?.success).toBe(false);
      expect
        .soft(
          result?.failures.map((f) => [f.phase, f.reason]),
          JSON.stringify(result?.failures),
        )
        .toEqual([["exec", c.reason]]);
      const m = await scrapeSamples(r);
      expect.soft(sampleOf(m, "sandbox_probe_success"), "sandbox_probe_success").toBe(0);
      expect
        .soft(sampleOf(m, "sandbox_probe_failures_total", { phase: "exec", reason: c.reason }))
        .toBe(1);
      const { doc } = await statusOf(r);
      expect
        .soft(doc.probe?.modules[0]?.recentFailures[0], "/status probe.recentFailures[0]")
        .toMatchObject({ phase: "exec", reason: c.reason });
      expect.soft(doc.probe?.modules[0]?.recentFailures[0]?.error, "failure text").not.toBe("");
      expectNoProbeSandboxLeft(r);
      // The exporter itself goes on: a poll cycle after the probe still resolves.
      expect(await r.e.runCycle()).toBeDefined();
      await expectHealthyAndSealed(r, rss);
    },
  );

  it("deletes every leftover probe sandbox within two orphan sweeps once DELETE recovers", async () => {
    const { r, rss } = await probeRig();
    const prober = r.e.prober;
    expect(prober, "--probe made a prober").toBeDefined();
    // Created sandboxes report a start an hour back: by the next sweep they are old orphans, as
    // they are when the sweep runs (at start, every 10th run) minutes after the failed delete.
    r.up.createdAgeMs = HOUR_MS;
    // Both probes' deletes fail, and so does the first delete of the first sweep.
    r.up.fault("DELETE /sandboxes/{id}", { kind: "status", status: 503 }, { times: 3 });
    for (let i = 0; i < 2; i++) {
      const result = await prober?.runOnce();
      expect
        .soft(
          result?.failures.map((f) => [f.phase, f.reason]),
          JSON.stringify(result?.failures),
        )
        .toEqual([["terminate", "http_status"]]);
      expect.soft(result?.leftBehind, "leftBehind names the sandbox").toBe(result?.sandboxId);
    }
    expect(r.up.probeSandboxes(), "two sandboxes left behind").toHaveLength(2);
    // The long-running process: slim poll walks (no per-sandbox series, no policy) read the same
    // list between the probes' creates and each sweep.
    let sweeps = 0;
    while (sweeps < 2 && r.up.probeSandboxes().length > 0) {
      await r.e.runCycle();
      await prober?.sweepOrphans();
      sweeps++;
    }
    expectNoProbeSandboxLeft(r);
    const m = await scrapeSamples(r);
    expect.soft(sampleOf(m, "sandbox_probe_orphans_deleted_total"), "orphans deleted").toBe(2);
    const { doc } = await statusOf(r);
    expect.soft(doc.probe?.lastSweep?.error ?? null, "last sweep error").toBeNull();
    await expectHealthyAndSealed(r, rss);
  });
});
