// The policy's pure core: (sandboxes, activity, rules, memory of earlier cycles, now) -> decisions.

import type { Sandbox } from "../platform/types.js";
import { formatDuration } from "../util/duration.js";
import { ageHolds, idleHolds, isProtected, type StateSets, selectorMatch } from "./match.js";
import type { PolicyRule, PolicySpec, SettledRule } from "./policy-settings.js";

/** What the evaluator says about one (rule, sandbox) pair. */
export type DecisionOutcome =
  | "act"
  | "pending"
  | "skipped_protected"
  | "skipped_cooldown"
  | "skipped_limit"
  | "skipped_blast_radius";

/** One decision with the reason an operator reads in the audit line and on /status. */
export interface PolicyDecision {
  rule: string;
  action: PolicyRule["action"];
  sandboxId: string;
  templateId: string;
  state: string;
  outcome: DecisionOutcome;
  dryRun: boolean;
  reason: string;
  /** Pending in the rule's notifyBefore period: announced at info level. */
  notice?: true;
}

/** What the evaluator remembers between fresh snapshots. */
export interface PolicyMemory {
  /** `rule\0id` -> fresh snapshots in a row on which the condition held, and since when. */
  readonly streaks: ReadonlyMap<string, { count: number; since: number }>;
  /** `rule\0id` -> epoch ms of the last action (done or dry-run), for the cooldown. */
  readonly lastAction: ReadonlyMap<string, number>;
}

export const EMPTY_MEMORY: PolicyMemory = { streaks: new Map(), lastAction: new Map() };

export interface EvaluationInput {
  /** The sandboxes this instance may act on (own shard). */
  sandboxes: readonly Sandbox[];
  /** Last activity (epoch ms) of the sandboxes whose idle condition is asked; undefined: unknown. */
  activity: ReadonlyMap<string, number | undefined>;
  spec: PolicySpec;
  states: StateSets;
  memory: PolicyMemory;
  now: number;
  /** Per idle rule: its idle share estimated from a random sample read fresh (see engine). */
  estimates?: ReadonlyMap<string, IdleEstimate>;
}

/** A rule's idle share estimated from a random sample of the sandboxes it looks at. */
export interface IdleEstimate {
  sampled: number;
  idle: number;
  /** Upper bound of the 95 % Wilson interval of the share, in percent. */
  upperPercent: number;
}

export interface Evaluation {
  decisions: PolicyDecision[];
  /** Per rule: sandboxes that match and meet the conditions, protected ones excluded. */
  candidates: Record<string, number>;
  /** Rules whose blast-radius stop fired this cycle. */
  blastRadius: string[];
  memory: PolicyMemory;
}

/** The key of a (rule, sandbox) pair in the memory. */
export function pairKey(rule: string, sandboxId: string): string {
  return `${rule}\0${sandboxId}`;
}

/** The sandbox id of a pairKey. */
export function idOfKey(key: string): string {
  return key.slice(key.indexOf("\0") + 1);
}

interface Qualifying {
  sandbox: Sandbox;
  last: number | undefined;
  why: string;
}

/** Evaluates every rule against the sandboxes; never targets a protected or unmatched sandbox. */
export function evaluatePolicy(input: EvaluationInput): Evaluation {
  const { spec, now, memory } = input;
  const cycle: CycleState = { decisions: [], streaks: new Map(), claimed: new Set(), acts: 0 };
  const candidates: Record<string, number> = {};
  const blastRadius: string[] = [];
  for (const rule of spec.rules) {
    const decide = decider(rule, cycle.decisions);
    const { qualifying, looked } = qualifyingFor(rule, input, decide);
    candidates[rule.name] = qualifying.length;
    for (const q of qualifying) {
      const key = pairKey(rule.name, q.sandbox.id);
      const prev = memory.streaks.get(key);
      cycle.streaks.set(key, { count: (prev?.count ?? 0) + 1, since: prev?.since ?? now });
    }
    const stop = blastRadiusStop(rule, input, qualifying.length, looked);
    if (stop !== undefined) {
      blastRadius.push(rule.name);
      for (const q of qualifying) decide(q.sandbox, "skipped_blast_radius", `${q.why}; ${stop}`);
      continue;
    }
    decideQualifying(rule, input, qualifying, cycle, decide);
  }
  return {
    decisions: cycle.decisions,
    candidates,
    blastRadius,
    memory: { streaks: cycle.streaks, lastAction: pruneActions(input) },
  };
}

/** What the rules of one evaluation share: the decisions, the streaks, the sandboxes acted on. */
interface CycleState {
  decisions: PolicyDecision[];
  streaks: Map<string, { count: number; since: number }>;
  /** Sandboxes an earlier rule acts on this cycle: no later rule takes them. */
  claimed: Set<string>;
  /** Actions this cycle, all rules together. */
  acts: number;
}

type Decide = (s: Sandbox, outcome: DecisionOutcome, reason: string, notice?: boolean) => void;

/** Adds `rule`'s decisions about a sandbox to `decisions`. */
function decider(rule: SettledRule, decisions: PolicyDecision[]): Decide {
  return (s, outcome, reason, notice = false) => {
    decisions.push({
      rule: rule.name,
      action: rule.action,
      sandboxId: s.id,
      templateId: s.templateId,
      state: s.state,
      outcome,
      dryRun: rule.dryRun,
      reason,
      ...(notice ? { notice: true as const } : {}),
    });
  };
}

/**
 * The sandboxes that meet the rule's conditions, protected ones decided as skipped, and how many
 * unprotected ones match its selector (the share's denominator).
 */
function qualifyingFor(
  rule: SettledRule,
  input: EvaluationInput,
  decide: Decide,
): { qualifying: Qualifying[]; looked: number } {
  const { spec, now } = input;
  let looked = 0;
  const qualifying: Qualifying[] = [];
  for (const s of input.sandboxes) {
    if (!selectorMatch(rule, s, input.states)) continue;
    // Protected ones are not in the share: they would make an over-broad rule look narrower.
    const isSafe = isProtected(s.metadata, spec.protectLabel, now);
    if (!isSafe) looked++;
    if (!ageHolds(rule, s, now)) continue;
    const last = rule.idleFor === undefined ? undefined : input.activity.get(s.id);
    if (!idleHolds(rule, last, now)) continue;
    const why = conditionText(rule, s, last, now);
    if (isSafe) {
      decide(s, "skipped_protected", `${why}; protected by ${spec.protectLabel.key}`);
      continue;
    }
    qualifying.push({ sandbox: s, last, why });
  }
  return { qualifying, looked };
}

/** Why the rule's blast-radius stop fires this cycle; undefined when it does not. */
function blastRadiusStop(
  rule: SettledRule,
  input: EvaluationInput,
  found: number,
  looked: number,
): string | undefined {
  const { spec } = input;
  // The share found idle is a lower bound when not every candidate was read; the sample's upper
  // bound covers the ones that were not.
  const est = input.estimates?.get(rule.name);
  const overFound = found * 100 > spec.maxMatchPercent * looked;
  const overEstimate = est !== undefined && est.upperPercent > spec.maxMatchPercent;
  if (looked < spec.minSandboxesForMatchPercent || !(overFound || overEstimate)) return undefined;
  return overFound
    ? `rule would act on ${found} of ${looked} matching sandboxes, over maxMatchPercent ${spec.maxMatchPercent}%`
    : `${est?.idle} of ${est?.sampled} sampled sandboxes idle: up to ${est?.upperPercent.toFixed(1)}% of ${looked}, over maxMatchPercent ${spec.maxMatchPercent}%`;
}

/** Decides each qualifying sandbox, the longest idle first: pending, skipped, or acted on. */
function decideQualifying(
  rule: SettledRule,
  input: EvaluationInput,
  qualifying: Qualifying[],
  cycle: CycleState,
  decide: Decide,
): void {
  const { spec, now, memory } = input;
  // The longest idle first, so a limit leaves the most recently active ones alone.
  qualifying.sort(
    (a, b) =>
      (a.last ?? a.sandbox.startedAt ?? 0) - (b.last ?? b.sandbox.startedAt ?? 0) ||
      (a.sandbox.id < b.sandbox.id ? -1 : 1),
  );
  let ruleActs = 0;
  const ruleLimit = rule.maxActionsPerCycle ?? Number.POSITIVE_INFINITY;
  for (const q of qualifying) {
    const s = q.sandbox;
    const key = pairKey(rule.name, s.id);
    const streak = cycle.streaks.get(key) as { count: number; since: number };
    const lastAction = memory.lastAction.get(key);
    if (cycle.claimed.has(s.id)) continue;
    if (streak.count < spec.consecutiveCycles) {
      decide(
        s,
        "pending",
        `${q.why}; held on ${streak.count} of ${spec.consecutiveCycles} fresh snapshots`,
      );
    } else if (rule.notifyBefore !== undefined && now - streak.since < rule.notifyBefore) {
      const at = new Date(streak.since + rule.notifyBefore).toISOString();
      decide(s, "pending", `${q.why}; notice period, acts from ${at}`, true);
    } else if (lastAction !== undefined && now - lastAction < rule.cooldown) {
      decide(
        s,
        "skipped_cooldown",
        `${q.why}; acted on ${formatDuration(now - lastAction)} ago, cooldown ${formatDuration(rule.cooldown)}`,
      );
    } else if (ruleActs >= ruleLimit || cycle.acts >= spec.maxActionsPerCycle) {
      const which =
        ruleActs >= ruleLimit ? `rule's ${ruleLimit}` : `global ${spec.maxActionsPerCycle}`;
      decide(s, "skipped_limit", `${q.why}; maxActionsPerCycle (${which}) reached`);
    } else {
      ruleActs++;
      cycle.acts++;
      cycle.claimed.add(s.id);
      decide(s, "act", q.why);
    }
  }
}

/** Drops cooldown entries that have run out (or whose rule is gone). */
function pruneActions(input: EvaluationInput): Map<string, number> {
  const cooldowns = new Map(input.spec.rules.map((r) => [r.name, r.cooldown]));
  const out = new Map<string, number>();
  for (const [key, at] of input.memory.lastAction) {
    const cooldown = cooldowns.get(key.slice(0, key.indexOf("\0")));
    if (cooldown !== undefined && input.now - at < cooldown) out.set(key, at);
  }
  return out;
}

/** Remembers the actions taken (done or dry-run) for the cooldown. */
export function recordActions(
  memory: PolicyMemory,
  acted: readonly { rule: string; sandboxId: string }[],
  now: number,
): PolicyMemory {
  const lastAction = new Map(memory.lastAction);
  for (const a of acted) lastAction.set(pairKey(a.rule, a.sandboxId), now);
  return { streaks: memory.streaks, lastAction };
}

/** `idle 42m >= 30m; age 3h > 2h`: which conditions held, with the figures. */
export function conditionText(
  rule: PolicyRule,
  s: Sandbox,
  last: number | undefined,
  now: number,
): string {
  const parts: string[] = [];
  if (rule.idleFor !== undefined && last !== undefined)
    parts.push(`idle ${formatDuration(now - last)} >= ${formatDuration(rule.idleFor)}`);
  if (s.startedAt !== undefined) {
    const age = formatDuration(now - s.startedAt);
    if (rule.maxAge !== undefined) parts.push(`age ${age} > ${formatDuration(rule.maxAge)}`);
    else if (rule.minAge !== undefined) parts.push(`age ${age} >= ${formatDuration(rule.minAge)}`);
  }
  return parts.length > 0 ? parts.join("; ") : "matches";
}
