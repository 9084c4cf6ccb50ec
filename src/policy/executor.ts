// Applies the evaluator's decisions: re-reads each sandbox, re-checks the rule, then acts once.

import type { PolicyHooks } from "../feature.js";
import { PlatformNotFoundError } from "../platform/http-errors.js";
import type { SnapshotDetail } from "../platform/normalize/snapshot-detail.js";
import type { Sandbox, SandboxUsage } from "../platform/types.js";
import { formatDuration, formatSpan } from "../util/duration.js";
import { errorMessage } from "../util/errors.js";
import type { ActivityTracker } from "./activity.js";
import type { DecisionOutcome, SandboxDecision } from "./evaluate.js";
import { cheapMatch, idleHolds, isProtected, type StateSets } from "./match.js";
import type { PolicyRule, PolicySpec } from "./policy-settings.js";

/**
 * What a decision came to; the `result` label of sandbox_policy_decisions_total. skipped_in_use
 * (a snapshot a sandbox uses: the walk showed one, or the platform refused the delete with a 400)
 * comes from the evaluation and the snapshot executor both.
 */
export type PolicyResult =
  | Exclude<DecisionOutcome, "act" | "pending">
  | "dry_run"
  | "done"
  | "failed"
  | "skipped_gone"
  | "skipped_changed"
  | "skipped_stale"
  | "skipped_unverified"
  | "skipped_time_budget";

/**
 * The management calls the executor makes: reads of the sandbox and its usage, of a snapshot's
 * details, and three mutations.
 */
export interface PolicyPlatform {
  snapshotDetail(templateId: string): Promise<SnapshotDetail>;
  deleteSnapshot(snapshotId: string): Promise<void>;
  getSandbox(id: string): Promise<Sandbox>;
  pauseSandbox(id: string): Promise<void>;
  deleteSandbox(id: string): Promise<void>;
  sandboxUsage(ids: readonly string[]): Promise<Map<string, SandboxUsage>>;
  sandboxUsageHistory(id: string, startS: number, endS: number): Promise<SandboxUsage[]>;
}

/** A usage history must start within this of the idleFor window's start to cover it. */
const USAGE_COVER_SLACK_MS = 60_000;

export interface ExecutorContext {
  platform: PolicyPlatform;
  activity: ActivityTracker;
  spec: PolicySpec;
  states: StateSets;
  now: () => number;
  /** Told of each action done or planned (dry-run), at the clock's time (cost savings). */
  onApplied?: PolicyHooks["onApplied"];
}

/** What the engine tells an observer of its actions and plans: the features' contract. */
export type { PolicyHooks };

/** The outcome of applying one "act" decision. */
export interface ActionOutcome {
  result: PolicyResult;
  /** Why, when the action was not done. */
  detail?: string;
}

/**
 * Applies one "act" decision. Dry-run and `log` make no call at all; otherwise the sandbox is read
 * again and the rule checked against what the platform says now, so a sandbox resumed or busy
 * since the snapshot is left alone. Mutations are never retried.
 */
export async function applyDecision(
  d: SandboxDecision,
  rule: PolicyRule,
  ctx: ExecutorContext,
): Promise<ActionOutcome> {
  if (d.dryRun) {
    ctx.onApplied?.(d, "dry_run", ctx.now());
    return { result: "dry_run" };
  }
  if (rule.action === "log") return { result: "done" };
  let fresh: Sandbox;
  try {
    fresh = await ctx.platform.getSandbox(d.sandboxId);
  } catch (err) {
    if (err instanceof PlatformNotFoundError) return { result: "skipped_gone" };
    return { result: "skipped_unverified", detail: `re-read failed: ${errorMessage(err)}` };
  }
  const now = ctx.now();
  if (!cheapMatch(rule, fresh, ctx.states, now))
    return { result: "skipped_changed", detail: `no longer matches (state ${fresh.state})` };
  if (isProtected(fresh.metadata, ctx.spec.protectLabel, now))
    return { result: "skipped_changed", detail: "protected since the snapshot" };
  if (rule.idleFor !== undefined) {
    const a = await ctx.activity.recheck(fresh, ctx.spec.activity);
    if (a.source === "error")
      return { result: "skipped_unverified", detail: `activity re-read failed: ${a.error}` };
    if (a.source === "gone") return { result: "skipped_gone" };
    if (!idleHolds(rule, a.at, now)) {
      const ago = a.at === undefined ? "unknown" : `${formatSpan(now - a.at)} ago`;
      return { result: "skipped_changed", detail: `active since the snapshot (last ${ago})` };
    }
    const usage = ctx.spec.activity.usage;
    if (usage) {
      const busy = await busyByUsage(ctx, fresh.id, rule.idleFor, usage.cpuBelowPercent, now);
      if (busy) return busy;
    }
  }
  try {
    if (rule.action === "pause") await ctx.platform.pauseSandbox(fresh.id);
    else await ctx.platform.deleteSandbox(fresh.id);
    ctx.onApplied?.(d, "done", ctx.now());
    return { result: "done" };
  } catch (err) {
    if (err instanceof PlatformNotFoundError) return { result: "skipped_gone" };
    return { result: "failed", detail: errorMessage(err) };
  }
}

/**
 * Whether the CPU history over the whole idleFor says busy (or cannot tell): undefined when it
 * stayed under the threshold throughout.
 */
async function busyByUsage(
  ctx: ExecutorContext,
  id: string,
  idleFor: number,
  belowPct: number,
  now: number,
): Promise<ActionOutcome | undefined> {
  let history: SandboxUsage[];
  try {
    history = await ctx.platform.sandboxUsageHistory(id, (now - idleFor) / 1000, now / 1000);
  } catch (err) {
    return {
      result: "skipped_unverified",
      detail: `usage history unreadable: ${errorMessage(err)}`,
    };
  }
  const first = history[0];
  if (first === undefined || first.at > now - idleFor + USAGE_COVER_SLACK_MS)
    return {
      result: "skipped_unverified",
      detail: `usage history does not cover idleFor ${formatDuration(idleFor)}`,
    };
  const peak = Math.max(...history.map((u) => u.cpuPct));
  if (peak >= belowPct)
    return {
      result: "skipped_changed",
      detail: `busy by CPU: ${peak}% within idleFor (threshold ${belowPct}%)`,
    };
  return undefined;
}
