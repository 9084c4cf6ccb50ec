// Retention rules, the pure part (src/policy/snapshot-rules.ts through evaluatePolicy): names
// globs, olderThan from created time or first sight, unusedFor only with the platform's details,
// keepLatest protecting the newest of a rule's matches from every rule, in-use snapshots skipped,
// the share limit, the caps shared with sandbox rules, and pausedFor on paused sandboxes.
import { describe, expect, it } from "vitest";
import type { SnapshotFact } from "../../src/collect/storage/snapshot-facts.js";
import type { Sandbox } from "../../src/platform/types.js";
import {
  EMPTY_MEMORY,
  type Evaluation,
  evaluatePolicy,
  type PolicyMemory,
  type SnapshotDecision,
} from "../../src/policy/evaluate.js";
import { PolicyFileSchema, policySpec } from "../../src/policy/policy-settings.js";

const NOW = Date.parse("2026-11-23T12:00:00Z");
const DAY = 86_400_000;
const states = { running: new Set(["running"]), paused: new Set(["paused"]) };

/** A snapshot made `days` ago (undefined: created time not known), first listed a minute ago. */
function snap(
  id: string,
  days: number | undefined,
  over: Partial<SnapshotFact> = {},
): SnapshotFact {
  return {
    id,
    names: [],
    firstSeenAt: NOW - 60_000,
    ...(days === undefined ? {} : { createdAt: NOW - days * DAY, lastSpawnedAt: null }),
    ...over,
  };
}

function spec(rules: unknown[], over: Record<string, unknown> = {}) {
  const file = PolicyFileSchema.parse({ consecutiveCycles: 1, rules, ...over });
  return policySpec({ enabled: true, dryRun: false }, file);
}

function evaluate(
  rules: unknown[],
  facts: SnapshotFact[],
  o: {
    inUse?: string[];
    sandboxes?: Sandbox[];
    memory?: PolicyMemory;
    over?: Record<string, unknown>;
    pausedSince?: (id: string) => number | undefined;
  } = {},
): Evaluation {
  return evaluatePolicy({
    sandboxes: o.sandboxes ?? [],
    activity: new Map(),
    spec: spec(rules, o.over),
    states,
    memory: o.memory ?? EMPTY_MEMORY,
    now: NOW,
    ...(o.pausedSince ? { pausedSince: o.pausedSince } : {}),
    snapshots: { facts: new Map(facts.map((f) => [f.id, f])), inUse: new Set(o.inUse ?? []) },
  });
}

const byOutcome = (e: Evaluation, outcome: string): string[] =>
  e.decisions
    .filter((d): d is SnapshotDecision => d.target === "snapshot" && d.outcome === outcome)
    .map((d) => d.snapshotId)
    .sort();

const OLD = { name: "old", target: "snapshot", action: "delete", allowDelete: true };

describe("retention rules", () => {
  it("acts on snapshots older than olderThan, counting from first sight when the created time is unknown", () => {
    const e = evaluate(
      [{ ...OLD, olderThan: "7d" }],
      [snap("a:default", 10), snap("b:default", 3), snap("c:default", undefined)],
    );
    expect(byOutcome(e, "act")).toEqual(["a:default"]);
    const d = e.decisions[0] as SnapshotDecision;
    expect(d.reason).toBe("age 240h > 168h");
    // First seen a minute ago: never older than that, whatever the real age.
    expect(e.candidates.old).toBe(1);
  });

  it("keeps the newest keepLatest of the rule's matches, an unknown created time counting as newest", () => {
    const facts = [
      snap("u:default", undefined, { firstSeenAt: NOW - 30 * DAY }),
      snap("n1:default", 8),
      snap("n2:default", 9),
      snap("n3:default", 10),
    ];
    const e = evaluate([{ ...OLD, olderThan: "7d", keepLatest: 2 }], facts);
    expect(byOutcome(e, "act")).toEqual(["n2:default", "n3:default"]);
    expect(byOutcome(e, "skipped_protected")).toEqual(["n1:default", "u:default"]);
    const kept = e.decisions.find((d) => d.outcome === "skipped_protected");
    expect(kept?.reason).toContain('among the newest 2 rule "old" keeps');
  });

  it("lets no rule touch what another rule keeps", () => {
    const e = evaluate(
      [
        { ...OLD, name: "keep", action: "log", keepLatest: 1, match: { names: ["nightly"] } },
        { ...OLD, olderThan: "1d" },
      ],
      [snap("team/nightly:default", 5, { names: ["team/nightly"] }), snap("x:default", 5)],
    );
    const old = e.decisions.filter((d) => d.rule === "old");
    expect(old.map((d) => [(d as SnapshotDecision).snapshotId, d.outcome])).toEqual([
      ["team/nightly:default", "skipped_protected"],
      ["x:default", "act"],
    ]);
  });

  it("acts on unusedFor only with the platform's details: last spawn, else the making", () => {
    const e = evaluate(
      [{ ...OLD, unusedFor: "3d" }],
      [
        snap("used:default", 30, { lastSpawnedAt: NOW - DAY }),
        snap("stale:default", 30, { lastSpawnedAt: NOW - 5 * DAY }),
        snap("never:default", 4),
        snap("young:default", 2),
        snap("nodetail:default", undefined, { firstSeenAt: NOW - 30 * DAY }),
      ],
    );
    expect(byOutcome(e, "act")).toEqual(["never:default", "stale:default"]);
    const never = e.decisions.find((d) => (d as SnapshotDecision).snapshotId === "never:default");
    expect(never?.reason).toBe("unused 96h (never used) >= 72h");
  });

  it("matches names with or without the tag and the team prefix; an unnamed one only without names", () => {
    const facts = [
      snap("team/ci-base:v2", 10, { names: ["team/ci-base"] }),
      snap("team/nightly:default", 10, { names: ["team/nightly"] }),
      snap("raw:default", 10),
    ];
    const ids = (names: string[]) =>
      byOutcome(evaluate([{ ...OLD, olderThan: "1d", match: { names } }], facts), "act");
    expect(ids(["ci-*"])).toEqual(["team/ci-base:v2"]);
    expect(ids(["team/ci-base:v2"])).toEqual(["team/ci-base:v2"]);
    expect(ids(["ci-base:default"])).toEqual([]);
    expect(ids(["*"])).toEqual(["team/ci-base:v2", "team/nightly:default"]);
    expect(ids(["team/nightl?"])).toEqual(["team/nightly:default"]);
    expect(byOutcome(evaluate([{ ...OLD, olderThan: "1d" }], facts), "act")).toHaveLength(3);
  });

  it("says in the reason that deleting a named snapshot deletes every build of its name", () => {
    const e = evaluate(
      [{ ...OLD, olderThan: "1d" }],
      [snap("team/nightly:v3", 5, { names: ["team/nightly:v3", "team/nightly"] })],
    );
    expect(e.decisions[0]?.reason).toBe(
      "age 120h > 24h; deleting it deletes every build of team/nightly",
    );
  });

  it("leaves a snapshot a sandbox was started from as skipped_in_use", () => {
    const e = evaluate(
      [{ ...OLD, olderThan: "1d" }],
      [snap("a:default", 5), snap("b:default", 5)],
      {
        inUse: ["a"],
      },
    );
    expect(byOutcome(e, "skipped_in_use")).toEqual(["a:default"]);
    expect(byOutcome(e, "act")).toEqual(["b:default"]);
  });

  it("stops a rule that would delete over maxMatchPercent of its matches", () => {
    const facts = Array.from({ length: 12 }, (_, i) => snap(`s${i}:default`, i < 8 ? 10 : 1));
    const e = evaluate([{ ...OLD, olderThan: "7d" }], facts, {
      over: { maxMatchPercent: 50 },
    });
    expect(e.blastRadius).toEqual(["old"]);
    expect(byOutcome(e, "skipped_blast_radius")).toHaveLength(8);
    expect(byOutcome(e, "act")).toEqual([]);
  });

  it("shares the global cap per cycle with the sandbox rules, the oldest first", () => {
    const sandboxes: Sandbox[] = [
      {
        id: "sbx",
        templateId: "t",
        state: "running",
        startedAt: NOW - 10 * DAY,
        metadata: {},
        extra: {},
      },
    ];
    const e = evaluate(
      [
        { name: "age", action: "log", maxAge: "1d" },
        { ...OLD, olderThan: "1d" },
      ],
      [snap("new:default", 3), snap("older:default", 9), snap("oldest:default", 20)],
      { sandboxes, over: { maxActionsPerCycle: 2 } },
    );
    expect(e.decisions.filter((d) => d.outcome === "act")).toHaveLength(2);
    expect(byOutcome(e, "act")).toEqual(["oldest:default"]);
    expect(byOutcome(e, "skipped_limit")).toEqual(["new:default", "older:default"]);
  });

  it("leaves a snapshot another rule acted on alone for the cooldown, whichever rule asks", () => {
    const rules = [
      { ...OLD, name: "first", action: "log", olderThan: "1d" },
      { ...OLD, name: "second", olderThan: "1d" },
    ];
    const memory: PolicyMemory = {
      streaks: new Map(),
      lastAction: new Map([["first\0a:default", NOW - 60_000]]),
    };
    const e = evaluate(rules, [snap("a:default", 5)], { memory });
    expect(e.decisions.map((d) => [d.rule, d.outcome])).toEqual([
      ["first", "skipped_cooldown"],
      ["second", "skipped_cooldown"],
    ]);
  });

  it("holds a snapshot pending until the condition held on consecutiveCycles runs", () => {
    const rules = [{ ...OLD, olderThan: "1d" }];
    const first = evaluate(rules, [snap("a:default", 5)], { over: { consecutiveCycles: 2 } });
    expect(byOutcome(first, "pending")).toEqual(["a:default"]);
    const second = evaluate(rules, [snap("a:default", 5)], {
      over: { consecutiveCycles: 2 },
      memory: first.memory,
    });
    expect(byOutcome(second, "act")).toEqual(["a:default"]);
  });
});

describe("pausedFor", () => {
  const paused = (id: string): Sandbox => ({
    id,
    templateId: "t",
    state: "paused",
    startedAt: NOW - 30 * DAY,
    metadata: {},
    extra: {},
  });

  it("acts on sandboxes paused long enough, by the pause clock, never on one whose pause is unknown", () => {
    const since: Record<string, number> = { long: NOW - 8 * DAY, short: NOW - DAY };
    const e = evaluatePolicy({
      sandboxes: [paused("long"), paused("short"), paused("unknown")],
      activity: new Map(),
      spec: spec([{ name: "reap", action: "delete", allowDelete: true, pausedFor: "7d" }]),
      states,
      memory: EMPTY_MEMORY,
      now: NOW,
      pausedSince: (id) => since[id],
    });
    expect(e.decisions.map((d) => [d.outcome, d.reason])).toEqual([["act", "paused 192h >= 168h"]]);
  });

  it("matches paused sandboxes only, and is refused on a pause rule", () => {
    const running = { ...paused("r"), state: "running" };
    const e = evaluatePolicy({
      sandboxes: [running],
      activity: new Map(),
      spec: spec([{ name: "reap", action: "log", pausedFor: "1s" }]),
      states,
      memory: EMPTY_MEMORY,
      now: NOW,
      pausedSince: () => NOW - DAY,
    });
    expect(e.decisions).toEqual([]);
    expect(() => spec([{ name: "p", action: "pause", pausedFor: "1d" }])).toThrow(/pausedFor/);
  });
});
