// A reload that lands while a policy run awaits its reads applies from the next run: the run in
// flight decides, samples and estimates with the rule set it started with.
import { afterEach, describe, expect, it } from "vitest";
import { idleRules, type PolicySetup, startPolicy, watching } from "./policy-exporter.js";

const rules = (idleFor: string) => idleRules({ idleFor });

let setup: PolicySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

describe("a reload during a policy run", () => {
  it("leaves the run in flight on its first rule set: decisions and estimates alike", async () => {
    // The sandboxes are two hours idle: idle by the first file (30m), not by the second (5h).
    let reload: (() => Promise<void>) | undefined;
    setup = await startPolicy(rules("30m"), 8, () =>
      watching((method, path) => {
        if (method !== "GET" || !path.includes("/logs") || !reload) return;
        const landing = reload();
        reload = undefined;
        return landing;
      }),
    );
    const s = setup;
    reload = async () => {
      s.files.set("rules.yaml", rules("5h"));
      expect((await s.exporter.reload()).ok).toBe(true);
    };
    await s.exporter.runCycle();
    expect(reload).toBeUndefined();
    const run = s.exporter.policy?.lastRun;
    expect(run?.outcomes.map((o) => o.result)).toEqual(Array(8).fill("dry_run"));
    for (const o of run?.outcomes ?? []) expect(o.reason).toMatch(/>= 30m$/);
    // The sample was read under the first file and judged by it: every sampled sandbox idle.
    const estimate = run?.estimates.idle;
    expect(estimate?.sampled).toBeGreaterThan(0);
    expect(estimate?.idle).toBe(estimate?.sampled);

    // The next run is the second file's: nothing is idle for 5h.
    s.clock.advance(10_000);
    await s.exporter.runCycle();
    const next = s.exporter.policy?.lastRun;
    expect(next?.outcomes).toEqual([]);
    expect(next?.estimates.idle?.idle).toBe(0);
  });
});
