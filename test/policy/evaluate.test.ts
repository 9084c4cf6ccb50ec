import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Sandbox } from "../../src/platform/types.js";
import type { SandboxDecision } from "../../src/policy/evaluate.js";
import { EMPTY_MEMORY, evaluatePolicy, type PolicyMemory } from "../../src/policy/evaluate.js";
import { cheapMatch, idleHolds, isProtected, parseTime } from "../../src/policy/match.js";
import { type PolicyRule, PolicyRuleSchema, policySpec } from "../../src/policy/policy-settings.js";
import { wilsonUpper } from "../../src/policy/sampling.js";
import { inTimeZone } from "../helpers/timezone.js";

const NOW = Date.parse("2026-11-23T12:00:00Z");
const MIN = 60_000;
const states = { running: new Set(["running"]), paused: new Set(["paused"]) };
const PROTECT = { key: "sandbox-exporter/protect", value: "true" };

function sandbox(id: string, over: Partial<Sandbox> = {}): Sandbox {
  return {
    id,
    templateId: "t1",
    state: "running",
    startedAt: NOW - 5 * 60 * MIN,
    metadata: {},
    extra: {},
    ...over,
  };
}

function rule(over: Record<string, unknown>): PolicyRule {
  return PolicyRuleSchema.parse({ name: "r", action: "pause", idleFor: "30m", ...over });
}

describe("protection", () => {
  it("protects with the label, lapses after until=, and protects when until= does not parse", () => {
    const at = (v: string) => isProtected({ [PROTECT.key]: v }, PROTECT, NOW);
    expect(at("true")).toBe(true);
    expect(at("false")).toBe(false);
    expect(at("until=2026-11-24T00:00:00Z")).toBe(true);
    expect(at("until=2026-11-22T00:00:00Z")).toBe(false);
    expect(at("until=next tuesday")).toBe(true);
    expect(at("yes please")).toBe(true);
    expect(isProtected({}, PROTECT, NOW)).toBe(false);
  });
});

describe("protection times", () => {
  // Far from UTC: reading a zone-less time as local time would move it by five hours.
  inTimeZone("America/New_York");

  it("reads an until= time without a zone as UTC", () => {
    const at = (v: string, now: number) => isProtected({ [PROTECT.key]: v }, PROTECT, now);
    expect(parseTime("2026-11-23T12:00:00")).toBe(NOW);
    expect(at("until=2026-11-23T12:00:00", NOW - 1)).toBe(true);
    expect(at("until=2026-11-23T12:00:00", NOW)).toBe(false);
    expect(at("until=2026-11-23", NOW)).toBe(false);
  });

  it("reads until= epoch numbers in seconds, milliseconds, micro- and nanoseconds", () => {
    for (const n of [NOW / 1000, NOW, NOW * 1000, NOW * 1_000_000]) {
      expect(parseTime(String(n)), String(n)).toBe(NOW);
      expect(isProtected({ [PROTECT.key]: `until=${n}` }, PROTECT, NOW - 1)).toBe(true);
      expect(isProtected({ [PROTECT.key]: `until=${n}` }, PROTECT, NOW)).toBe(false);
    }
  });

  it.each([
    "until=",
    "until=0",
    "until=2026-11-23T12:00:",
    "until=2026-02-30T25:00:00Z",
    "until=-5",
  ])("keeps protecting when %j does not read as a time", (v) => {
    expect(isProtected({ [PROTECT.key]: v }, PROTECT, NOW + 365 * 24 * 60 * MIN)).toBe(true);
  });
});

describe("cheap match", () => {
  it("applies states, templates, metadata selectors and ages; pause needs a running state; probes never match", () => {
    const r = rule({
      match: { templates: ["t1"], metadata: ["team=ml", "env notin (prod)", "!keep"] },
      minAge: "1h",
    });
    const ok = sandbox("a", { metadata: { team: "ml" } });
    expect(cheapMatch(r, ok, states, NOW)).toBe(true);
    expect(cheapMatch(r, { ...ok, templateId: "t2" }, states, NOW)).toBe(false);
    expect(cheapMatch(r, { ...ok, metadata: { team: "ml", env: "prod" } }, states, NOW)).toBe(
      false,
    );
    expect(cheapMatch(r, { ...ok, metadata: { team: "ml", keep: "" } }, states, NOW)).toBe(false);
    expect(cheapMatch(r, { ...ok, state: "paused" }, states, NOW)).toBe(false);
    expect(cheapMatch(r, { ...ok, startedAt: NOW - MIN }, states, NOW)).toBe(false);
    const probe = { ...ok, metadata: { team: "ml", "sandbox-exporter/probe": "default" } };
    expect(cheapMatch(r, probe, states, NOW)).toBe(false);
    const old = rule({ action: "delete", allowDelete: true, idleFor: undefined, maxAge: "4h" });
    expect(cheapMatch(old, ok, states, NOW)).toBe(true);
    expect(cheapMatch(old, { ...ok, startedAt: NOW - 3 * 60 * MIN }, states, NOW)).toBe(false);
  });

  it("never finds a sandbox idle whose activity is unknown", () => {
    expect(idleHolds(rule({}), undefined, NOW)).toBe(false);
    expect(idleHolds(rule({}), NOW - 31 * MIN, NOW)).toBe(true);
    expect(idleHolds(rule({}), NOW - 29 * MIN, NOW)).toBe(false);
  });
});

describe("evaluatePolicy", () => {
  it("acts after consecutiveCycles, then respects the cooldown", () => {
    const spec = policySpec(
      { dryRun: true, enabled: true },
      { rules: [rule({})], maxMatchPercent: 100 },
    );
    const sandboxes = [sandbox("a")];
    const activity = new Map([["a", NOW - 60 * MIN]]);
    let memory: PolicyMemory = EMPTY_MEMORY;
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const e = evaluatePolicy({ sandboxes, activity, spec, states, memory, now: NOW + i * MIN });
      const d = e.decisions[0];
      outcomes.push(d?.outcome ?? "none");
      memory = e.memory;
      if (d?.outcome === "act")
        memory = { ...memory, lastAction: new Map([["r\0a", NOW + i * MIN]]) };
    }
    expect(outcomes).toEqual(["pending", "act", "skipped_cooldown"]);
  });

  it("gives its reasons in figures a person reads: to the minute from an hour, to the second below", () => {
    const spec = policySpec(
      { dryRun: true, enabled: true },
      { rules: [rule({ maxAge: "2h", cooldown: "10m" })], maxMatchPercent: 100 },
    );
    // Idle 68h22m0.518s, 68h22m4.541s old: the figures the demo's audit lines used to carry.
    const sandboxes = [sandbox("a", { startedAt: NOW - 246_124_541 })];
    const activity = new Map([["a", NOW - 246_120_518]]);
    const first = evaluatePolicy({
      sandboxes,
      activity,
      spec,
      states,
      memory: EMPTY_MEMORY,
      now: NOW,
    });
    expect(first.decisions[0]?.reason).toMatch(
      /^idle 68h22m >= 30m; age 68h22m > 2h; held on 1 of/,
    );
    const acted = { ...first.memory, lastAction: new Map([["r\0a", NOW - 299_700]]) };
    const later = evaluatePolicy({ sandboxes, activity, spec, states, memory: acted, now: NOW });
    expect(later.decisions[0]?.reason).toMatch(/; acted on 4m59s ago, cooldown 10m$/);
  });

  const arbSandbox = fc.record({
    id: fc.string({ minLength: 1, maxLength: 4 }),
    templateId: fc.constantFrom("t1", "t2", "t3"),
    state: fc.constantFrom("running", "paused", "active", "killed"),
    startedAt: fc.option(fc.integer({ min: NOW - 10 * 3_600_000, max: NOW }), { nil: undefined }),
    metadata: fc.dictionary(
      fc.constantFrom("team", "env", "sandbox-exporter/protect", "sandbox-exporter/probe"),
      fc.constantFrom("ml", "prod", "true", "false", "until=2026-11-24T00:00:00Z", "until=x"),
    ),
    extra: fc.constant({}),
  });
  const arbRule = fc.record({
    name: fc.constantFrom("a", "b", "c"),
    action: fc.constantFrom("pause", "delete", "log"),
    allowDelete: fc.constant(true),
    idleFor: fc.integer({ min: MIN, max: 5 * 3_600_000 }),
    maxAge: fc.option(fc.integer({ min: MIN, max: 5 * 3_600_000 }), { nil: undefined }),
    minAge: fc.option(fc.integer({ min: MIN, max: 5 * 3_600_000 }), { nil: undefined }),
    maxActionsPerCycle: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
    match: fc.record(
      {
        states: fc.subarray(["running", "paused", "active"]),
        templates: fc.subarray(["t1", "t2"]),
        metadata: fc.subarray(["team=ml", "env!=prod", "env in (ml,prod)", "!team"]),
      },
      { requiredKeys: [] },
    ),
  });

  it("never targets a protected or unmatched sandbox, nor exceeds the limits or the blast radius", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(arbSandbox, { selector: (s) => s.id, maxLength: 40 }),
        fc.uniqueArray(arbRule, { selector: (r) => r.name, minLength: 1, maxLength: 3 }),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 100 }),
        fc.func(fc.option(fc.integer({ min: 0, max: 8 * 3_600_000 }), { nil: undefined })),
        (sandboxes, rawRules, maxActions, cycles, maxMatchPercent, idleOf) => {
          const rules = rawRules.map((r) => PolicyRuleSchema.parse(r));
          const spec = policySpec(
            { dryRun: true, enabled: true },
            { rules, maxActionsPerCycle: maxActions, consecutiveCycles: cycles, maxMatchPercent },
          );
          const activity = new Map(
            sandboxes.map((s) => {
              const ago = idleOf(s.id);
              return [s.id, ago === undefined ? undefined : NOW - ago] as const;
            }),
          );
          let memory: PolicyMemory = EMPTY_MEMORY;
          for (let c = 0; c < cycles + 1; c++) {
            const now = NOW + c * MIN;
            const e = evaluatePolicy({ sandboxes, activity, spec, states, memory, now });
            memory = e.memory;
            const acts = e.decisions.filter((d) => d.outcome === "act");
            expect(acts.length).toBeLessThanOrEqual(maxActions);
            expect(new Set(acts.map((d) => (d as SandboxDecision).sandboxId)).size).toBe(
              acts.length,
            );
            for (const r of rules) {
              const mine = acts.filter((d) => d.rule === r.name);
              expect(mine.length).toBeLessThanOrEqual(r.maxActionsPerCycle ?? Infinity);
              if (e.blastRadius.includes(r.name)) expect(mine).toEqual([]);
            }
            for (const d of acts) {
              const s = sandboxes.find((x) => x.id === (d as SandboxDecision).sandboxId) as Sandbox;
              const r = rules.find((x) => x.name === d.rule) as PolicyRule;
              expect(isProtected(s.metadata, spec.protectLabel, now)).toBe(false);
              expect(cheapMatch(r, s, states, now)).toBe(true);
              expect(idleHolds(r, activity.get(s.id), now)).toBe(true);
              expect(c + 1).toBeGreaterThanOrEqual(cycles);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("wilsonUpper", () => {
  it("bounds the share from above at 95 %, tighter as the sample grows", () => {
    expect(wilsonUpper(50, 50)).toBeCloseTo(1, 12);
    expect(wilsonUpper(0, 100)).toBeCloseTo(0.037, 3);
    expect(wilsonUpper(10, 100)).toBeCloseTo(0.174, 3);
    expect(wilsonUpper(100, 1000)).toBeCloseTo(0.1203, 3);
    expect(wilsonUpper(0, 0)).toBe(1);
  });
});
