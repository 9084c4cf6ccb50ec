// The policy's pure core: (sandboxes, activity, rules, memory of earlier cycles, now) -> decisions.

import type { SnapshotFact } from "../collect/storage/snapshot-facts.js";
import type { Sandbox } from "../platform/types.js";
import { formatDuration, formatSpan } from "../util/duration.js";
import {
  ageHolds,
  idleHolds,
  isProtected,
  pausedHolds,
  type StateSets,
  selectorMatch,
} from "./match.js";
import { lastActedById, type PolicyMemory, pruneActions, type Streak } from "./policy-memory.js";
import type { PolicyRule, PolicySpec, SettledRule, SnapshotRule } from "./policy-settings.js";
import { evaluateSnapshotRules } from "./snapshot-rules.js";

export {
  EMPTY_MEMORY,
  idOfKey,
  type PolicyMemory,
  pairKey,
  recordActions,
  type Streak,
} from "./policy-memory.js";

/** What the evaluator says about one (rule, sandbox) pair. */
export type DecisionOutcome =
  | "act"
  | "pending"
  | "skipped_protected"
  | "skipped_cooldown"
  | "skipped_limit"
  | "skipped_blast_radius"
  | "skipped_in_use";

/** What every decision says, whatever the rule acts on. */
interface DecisionBase {
  rule: string;
  outcome: DecisionOutcome;
  dryRun: boolean;
  reason: string;
  /** Pending in the rule's notifyBefore period: announced at info level. */
  notice?: true;
}

/** One decision about a sandbox, with the reason an operator reads in the audit line and on /status. */
export interface SandboxDecision extends DecisionBase {
  target?: undefined;
  action: PolicyRule["action"];
  sandboxId: string;
  templateId: string;
  state: string;
}

/** One decision about a snapshot (a retention rule). */
export interface SnapshotDecision extends DecisionBase {
  target: "snapshot";
  action: SnapshotRule["action"];
  snapshotId: string;
  names: readonly string[];
}

export type PolicyDecision = SandboxDecision | SnapshotDecision;

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
  /** Epoch ms each paused sandbox was paused, as far as known (pausedFor rules). */
  pausedSince?: (sandboxId: string) => number | undefined;
  /** The snapshots the retention rules look at; absent: they are not evaluated this run. */
  snapshots?: SnapshotsInput;
}

/** What the retention rules are evaluated on. */
export interface SnapshotsInput {
  /** Each snapshot listed (newest first), with its facts. */
  facts: ReadonlyMap<string, SnapshotFact>;
  /** Template ids this shard's sandboxes (running or paused) were started from. */
  inUse: ReadonlySet<string>;
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

interface Qualifying {
  sandbox: Sandbox;
  /** What the rule's order goes by: the pause (pausedFor), else the last activity. */
  last: number | undefined;
  why: string;
}

/** Evaluates every rule against the sandboxes; never targets a protected or unmatched sandbox. */
export function evaluatePolicy(input: EvaluationInput): Evaluation {
  const cycle: CycleState = {
    decisions: [],
    streaks: new Map(),
    claimed: new Set(),
    acts: 0,
    lastActed: lastActedById(input.memory),
  };
  const ctx: RuleContext = { input, cycle, blastRadius: [], candidates: {} };
  for (const rule of input.spec.rules) {
    const decide = decider(rule, cycle.decisions);
    const { qualifying, looked } = qualifyingFor(rule, input, decide);
    ctx.candidates[rule.name] = qualifying.length;
    const stop = blastRadiusStop(rule.name, input, qualifying.length, looked);
    // The longest idle first, so a limit leaves the most recently active ones alone.
    const items = qualifying.map((q) => ({
      id: q.sandbox.id,
      at: q.last ?? q.sandbox.startedAt ?? 0,
      why: q.why,
      item: q.sandbox,
    }));
    decideRule(rule, items, stop, ctx, (c, outcome, reason, notice) =>
      decide(c.item, outcome, reason, notice),
    );
  }
  if (input.snapshots) evaluateSnapshotRules(input.snapshots, ctx);
  return {
    decisions: cycle.decisions,
    candidates: ctx.candidates,
    blastRadius: ctx.blastRadius,
    memory: {
      streaks: cycle.streaks,
      lastAction: pruneActions(input.memory, input.spec, input.now),
    },
  };
}

/** One run's evaluation as a rule sees it: the input, the cycle so far, what it found. */
export interface RuleContext {
  input: EvaluationInput;
  cycle: CycleState;
  /** Rules whose blast-radius stop fired. */
  blastRadius: string[];
  /** Per rule: what matches and meets the conditions, protected ones excluded. */
  candidates: Record<string, number>;
}

/** Something a rule may act on, with the time its order goes by (the oldest first). */
export interface Candidate<T> {
  id: string;
  at: number;
  why: string;
  item: T;
}

export type DecideCandidate<T> = (
  c: Candidate<T>,
  outcome: DecisionOutcome,
  reason: string,
  notice?: boolean,
) => void;

/**
 * The streaks of a rule's qualifying candidates, then the blast-radius stop (`stop`: why it
 * fires) or the decision of each in turn.
 */
export function decideRule<T>(
  rule: RuleLimits,
  items: Candidate<T>[],
  stop: string | undefined,
  ctx: RuleContext,
  decide: DecideCandidate<T>,
): void {
  const { input, cycle } = ctx;
  const before = input.memory.streaks.get(rule.name);
  const held = new Map<string, Streak>();
  cycle.streaks.set(rule.name, held);
  for (const c of items) {
    const prev = before?.get(c.id);
    held.set(c.id, { count: (prev?.count ?? 0) + 1, since: prev?.since ?? input.now });
  }
  if (stop !== undefined) {
    ctx.blastRadius.push(rule.name);
    for (const c of items) decide(c, "skipped_blast_radius", `${c.why}; ${stop}`);
    return;
  }
  decideInTurn(rule, items, input, cycle, decide);
}

/** What every rule says about how often it acts. */
type RuleLimits = Pick<SettledRule, "name" | "maxActionsPerCycle" | "notifyBefore" | "cooldown">;

/** What the rules of one evaluation share: the decisions, the streaks, the sandboxes acted on. */
export interface CycleState {
  decisions: PolicyDecision[];
  streaks: Map<string, Map<string, Streak>>;
  /** Sandboxes (and snapshots) an earlier rule acts on this cycle: no later rule takes them. */
  claimed: Set<string>;
  /** Actions this cycle, all rules together. */
  acts: number;
  /** Id -> the latest action on it (done or dry-run), whichever rule took it: the cooldown. */
  lastActed: ReadonlyMap<string, number>;
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
    const paused = rule.pausedFor === undefined ? undefined : input.pausedSince?.(s.id);
    if (!pausedHolds(rule, paused, now)) continue;
    const why = conditionText(rule, s, { last, paused }, now);
    if (isSafe) {
      decide(s, "skipped_protected", `${why}; protected by ${spec.protectLabel.key}`);
      continue;
    }
    qualifying.push({ sandbox: s, last: paused ?? last, why });
  }
  return { qualifying, looked };
}

/** Why the rule's blast-radius stop fires this cycle; undefined when it does not. */
export function blastRadiusStop(
  rule: string,
  input: EvaluationInput,
  found: number,
  looked: number,
  what = "sandboxes",
): string | undefined {
  const { spec } = input;
  // The share found idle is a lower bound when not every candidate was read; the sample's upper
  // bound covers the ones that were not.
  const est = input.estimates?.get(rule);
  const overFound = found * 100 > spec.maxMatchPercent * looked;
  const overEstimate = est !== undefined && est.upperPercent > spec.maxMatchPercent;
  if (looked < spec.minSandboxesForMatchPercent || !(overFound || overEstimate)) return undefined;
  return overFound
    ? `rule would act on ${found} of ${looked} matching ${what}, over maxMatchPercent ${spec.maxMatchPercent}%`
    : `${est?.idle} of ${est?.sampled} sampled sandboxes idle: up to ${est?.upperPercent.toFixed(1)}% of ${looked}, over maxMatchPercent ${spec.maxMatchPercent}%`;
}

/** Decides each candidate, the oldest `at` first: pending, skipped, or acted on. */
function decideInTurn<T>(
  rule: RuleLimits,
  items: Candidate<T>[],
  input: EvaluationInput,
  cycle: CycleState,
  decide: DecideCandidate<T>,
): void {
  const { spec, now } = input;
  items.sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
  let ruleActs = 0;
  const ruleLimit = rule.maxActionsPerCycle ?? Number.POSITIVE_INFINITY;
  const held = cycle.streaks.get(rule.name);
  for (const c of items) {
    const streak = held?.get(c.id) as Streak;
    const lastAction = cycle.lastActed.get(c.id);
    if (cycle.claimed.has(c.id)) continue;
    if (streak.count < spec.consecutiveCycles) {
      decide(
        c,
        "pending",
        `${c.why}; held on ${streak.count} of ${spec.consecutiveCycles} fresh snapshots`,
      );
    } else if (rule.notifyBefore !== undefined && now - streak.since < rule.notifyBefore) {
      const at = new Date(streak.since + rule.notifyBefore).toISOString();
      decide(c, "pending", `${c.why}; notice period, acts from ${at}`, true);
    } else if (lastAction !== undefined && now - lastAction < rule.cooldown) {
      decide(
        c,
        "skipped_cooldown",
        `${c.why}; acted on ${formatSpan(now - lastAction, rule.cooldown)} ago, cooldown ${formatDuration(rule.cooldown)}`,
      );
    } else if (ruleActs >= ruleLimit || cycle.acts >= spec.maxActionsPerCycle) {
      const which =
        ruleActs >= ruleLimit ? `rule's ${ruleLimit}` : `global ${spec.maxActionsPerCycle}`;
      decide(c, "skipped_limit", `${c.why}; maxActionsPerCycle (${which}) reached`);
    } else {
      ruleActs++;
      cycle.acts++;
      cycle.claimed.add(c.id);
      decide(c, "act", c.why);
    }
  }
}

/** `idle 42m >= 30m; age 3h > 2h`: which conditions held, with the figures. */
export function conditionText(
  rule: PolicyRule,
  s: Sandbox,
  at: { last?: number | undefined; paused?: number | undefined },
  now: number,
): string {
  const parts: string[] = [];
  const { last, paused } = at;
  if (rule.idleFor !== undefined && last !== undefined)
    parts.push(`idle ${formatSpan(now - last, rule.idleFor)} >= ${formatDuration(rule.idleFor)}`);
  if (rule.pausedFor !== undefined && paused !== undefined)
    parts.push(
      `paused ${formatSpan(now - paused, rule.pausedFor)} >= ${formatDuration(rule.pausedFor)}`,
    );
  if (s.startedAt !== undefined) {
    const age = now - s.startedAt;
    if (rule.maxAge !== undefined)
      parts.push(`age ${formatSpan(age, rule.maxAge, true)} > ${formatDuration(rule.maxAge)}`);
    else if (rule.minAge !== undefined)
      parts.push(`age ${formatSpan(age, rule.minAge)} >= ${formatDuration(rule.minAge)}`);
  }
  return parts.length > 0 ? parts.join("; ") : "matches";
}
