// The per-rule summary of what a run passed over is said at info when it changes, and at debug
// while it repeats: a steady fleet does not log the same cooldown counts every poll.
import { afterEach, describe, expect, it } from "vitest";
import { DEBUG, INFO, idleRules, type PolicySetup, startPolicy } from "./policy-exporter.js";

const SUMMARY = "policy rule summary";
const RULES = idleRules({ maxActions: 2, extra: "    cooldown: 1h\n" });

let setup: PolicySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

describe("the policy rule summary", () => {
  it("is logged at info only when a rule's counts change, else at debug", async () => {
    // Two sandboxes, two actions a run: the first run acts on both, the later ones skip both
    // for their cooldown, the same counts every run.
    setup = await startPolicy(RULES, 2);
    const s = setup;
    const summaries = () => s.lines.filter((l) => l.msg === SUMMARY);
    for (let run = 0; run < 6; run++) {
      await s.exporter.runCycle();
      s.clock.advance(5_000);
    }
    expect(summaries().map((l) => [l.level, l.skipped])).toEqual([
      [INFO, { skipped_cooldown: 2 }],
      [DEBUG, { skipped_cooldown: 2 }],
      [DEBUG, { skipped_cooldown: 2 }],
      [DEBUG, { skipped_cooldown: 2 }],
      [DEBUG, { skipped_cooldown: 2 }],
    ]);
    // A change is news: a third idle sandbox changes the counts, which then repeat again.
    s.sim.state.addSandbox({
      sandboxID: "sbx-new",
      templateID: s.sim.state.templates[0]?.templateID as string,
      state: "running",
      startedAt: s.clock.now() - 3 * 60 * 60_000,
      logs: [{ timestamp: s.clock.now() - 2 * 60 * 60_000, line: "work", level: "info" }],
    });
    const before = summaries().length;
    for (let run = 0; run < 3; run++) {
      await s.exporter.runCycle();
      s.clock.advance(5_000);
    }
    const after = summaries().slice(before);
    // Run 7 acts on it (the cooling two leave the cap free): the summary is unchanged. Run 8
    // cools three: new counts at info, then repeated at debug.
    expect(after.map((l) => [l.level, l.skipped])).toEqual([
      [DEBUG, { skipped_cooldown: 2 }],
      [INFO, { skipped_cooldown: 3 }],
      [DEBUG, { skipped_cooldown: 3 }],
    ]);
    // Nine runs, two summaries at info: one per change.
    expect(summaries().filter((l) => l.level === INFO)).toHaveLength(2);
  });
});
