import { describe, expect, it } from "vitest";
import { lineSink, PolicyRunTally } from "../../tools/policy-run-tally.js";

const LOGS = "GET /v2/sandboxes/{id}/logs";
const WALK = "GET /v2/sandboxes";

describe("PolicyRunTally", () => {
  it("counts only the policy's routes between a run's start and end", () => {
    const t = new PolicyRunTally([LOGS], 0);
    t.start({ [LOGS]: 5, [WALK]: 10 }, 100);
    const run = t.end({ [LOGS]: 105, [WALK]: 30 }, 350);
    expect(run).toMatchObject({ startMs: 100, ms: 250, requests: { [LOGS]: 100 } });
    expect(run.requestsTotal).toBe(100);
  });

  it("tells actions, notices and rule summaries apart, and keeps the first action's time", () => {
    const t = new PolicyRunTally([], 1_000);
    t.start({}, 1_000);
    t.line({ component: "policy", audit: true, result: "pending", sandbox: "a" }, 1_010);
    t.line({ component: "policy", audit: true, result: "dry_run", sandbox: "b" }, 1_020);
    t.line({ component: "policy", audit: true, skipped: { skipped_limit: 40 } }, 1_030);
    t.line({ component: "policy", msg: "policy run over its time budget" }, 1_040);
    t.line({ msg: "sandbox walk still running at this tick" }, 1_050);
    const run = t.end({}, 1_100);
    expect(run).toMatchObject({ lines: 4, auditLines: 3, actions: 1, notices: 1, summaries: 1 });
    expect(run.acted).toEqual(["b"]);
    expect(run.skipped).toEqual({ skipped_limit: 40 });
    expect(t.firstActionMs).toBe(20);
  });

  it("counts policy lines written outside any run apart", () => {
    const t = new PolicyRunTally([], 0);
    t.line({ component: "policy", msg: "policy blocked: no action" }, 5);
    expect(t.outsideLines).toBe(1);
    expect(t.runs).toEqual([]);
  });
});

describe("lineSink", () => {
  it("parses each line of a chunk", () => {
    const got: unknown[] = [];
    lineSink((r) => got.push(r)).write('{"a":1}\n{"b":2}\n');
    expect(got).toEqual([{ a: 1 }, { b: 2 }]);
  });
});
