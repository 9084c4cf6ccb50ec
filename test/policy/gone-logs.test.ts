// A sandbox killed between the walk and its idle-signal log read (the read answers 404) has gone:
// no failure, no warning, no decision; any other failed read still warns.

import { afterEach, describe, expect, it } from "vitest";
import type { SandboxDecision } from "../../src/policy/evaluate.js";
import { samples, scrape } from "../helpers/exporter.js";
import { idleRules, type PolicySetup, startPolicy, WARN, watching } from "./policy-exporter.js";

const READS_FAILED = "idle-signal log reads failed; those sandboxes count as active";
const KILLED = "sbx-001";
const RULES = idleRules();

let setup: PolicySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

async function reads(s: PolicySetup): Promise<Record<string, number | undefined>> {
  const m = samples(await scrape(s.exporter));
  const read = (result: string) => m.get(`sandbox_policy_activity_reads_total{result="${result}"}`);
  return { ok: read("ok"), error: read("error"), gone: read("gone") };
}

describe("idle-signal log reads", () => {
  it("count a sandbox whose logs answer 404 as gone, not failed, and say nothing", async () => {
    setup = await startPolicy(RULES, 4, (sim) =>
      // The sandbox is killed once the walk is done, just before its log read arrives.
      watching((method, path) => {
        if (method === "GET" && path.includes(`/${KILLED}/logs`)) sim.state.removeSandbox(KILLED);
      }),
    );
    const s = setup;
    await s.exporter.runCycle();
    const run = s.exporter.policy?.lastRun;
    expect(s.lines.filter((l) => (l.level as number) >= WARN)).toEqual([]);
    expect(await reads(s)).toEqual({ ok: 3, error: 0, gone: 1 });
    // The three left are decided; the gone one is in no decision and no sample.
    expect(run?.outcomes.map((o) => (o as SandboxDecision).sandboxId).sort()).toEqual([
      "sbx-000",
      "sbx-002",
      "sbx-003",
    ]);
    expect(run?.estimates.idle).toMatchObject({ sampled: 3, idle: 3 });
  });

  it("still warn when a read fails otherwise", async () => {
    setup = await startPolicy(RULES, 2);
    const s = setup;
    s.sim.faults.route("GET /v2/sandboxes/{id}/logs", { status: 500 });
    await s.exporter.runCycle();
    const warned = s.lines.filter((l) => l.msg === READS_FAILED);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: WARN, readErrors: 2 });
    expect(await reads(s)).toEqual({ ok: 0, error: 2, gone: 0 });
  });
});
