// A reload that adds the first retention rule to an exporter started without the snapshot list
// (no poll.storage, no retention rule at start) is refused, naming the rule; the rules in force
// stay. An exporter started with one reads the list without poll.storage.
import { afterEach, describe, expect, it } from "vitest";
import { idleRules, type PolicySetup, startPolicy } from "./policy-exporter.js";

let setup: PolicySetup | undefined;
afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

const RETENTION = `
  - name: old-snapshots
    target: snapshot
    olderThan: 7d
    action: log
`;

describe("retention rules and the snapshot list", () => {
  it("refuses a reload that adds the first retention rule to an exporter without the list", async () => {
    setup = await startPolicy(idleRules(), 2);
    const s = setup;
    await s.exporter.runCycle();
    s.files.set("rules.yaml", idleRules({ extra: RETENTION }));
    const result = await s.exporter.reload();
    expect(result.ok).toBe(false);
    expect((result as { error?: string }).error).toContain(
      'policy file rules.yaml: rule "old-snapshots": target snapshot reads the snapshot list',
    );
    expect(s.exporter.policy?.status()).toMatchObject({ rules: [{ name: "idle" }] });
  });

  it("reads the snapshot list for a retention rule present at start, without poll.storage", async () => {
    setup = await startPolicy(idleRules({ extra: RETENTION }), 2);
    const snapshot = await setup.exporter.runCycle();
    // The storage collector ran (this platform serves no snapshot list: unsupported, not skipped),
    // and the retention rules say so on /status.
    expect(snapshot?.collectors.storage).toMatchObject({ unsupported: true });
    expect(snapshot?.collectors.storage?.skipped).toBeFalsy();
    expect(setup.exporter.policy?.status()).toMatchObject({ snapshots: "unsupported" });
  });
});
