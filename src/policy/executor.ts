// Applies the evaluator's decisions: re-reads each sandbox, re-checks the rule, then acts once.
import type { PolicyRule, PolicySpec } from "../config/policy-schema.js";
import { PlatformNotFoundError } from "../platform/http-errors.js";
import type { Sandbox } from "../platform/types.js";
import { formatDuration } from "../util/duration.js";
import type { ActivityTracker } from "./activity.js";
import type { DecisionOutcome, PolicyDecision } from "./evaluate.js";
import { cheapMatch, idleHolds, isProtected, type StateSets } from "./match.js";

/** What a decision came to; the `result` label of sandbox_policy_decisions_total. */
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

/** The management calls the executor makes: one read and the two mutations. */
export interface PolicyPlatform {
  getSandbox(id: string): Promise<Sandbox>;
  pauseSandbox(id: string): Promise<void>;
  deleteSandbox(id: string): Promise<void>;
}

export interface ExecutorContext {
  platform: PolicyPlatform;
  activity: ActivityTracker;
  spec: PolicySpec;
  states: StateSets;
  now: () => number;
}

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
  d: PolicyDecision,
  rule: PolicyRule,
  ctx: ExecutorContext,
): Promise<ActionOutcome> {
  if (d.dryRun) return { result: "dry_run" };
  if (rule.action === "log") return { result: "done" };
  let fresh: Sandbox;
  try {
    fresh = await ctx.platform.getSandbox(d.sandboxId);
  } catch (err) {
    if (err instanceof PlatformNotFoundError) return { result: "skipped_gone" };
    return { result: "skipped_unverified", detail: `re-read failed: ${message(err)}` };
  }
  const now = ctx.now();
  if (!cheapMatch(rule, fresh, ctx.states, now))
    return { result: "skipped_changed", detail: `no longer matches (state ${fresh.state})` };
  if (isProtected(fresh.metadata, ctx.spec.protectLabel, now))
    return { result: "skipped_changed", detail: "protected since the snapshot" };
  if (rule.idleFor !== undefined) {
    const a = await ctx.activity.recheck(fresh);
    if (a.source === "error")
      return { result: "skipped_unverified", detail: `activity re-read failed: ${a.error}` };
    if (!idleHolds(rule, a.at, now)) {
      const ago = a.at === undefined ? "unknown" : `${formatDuration(now - a.at)} ago`;
      return { result: "skipped_changed", detail: `active since the snapshot (last ${ago})` };
    }
  }
  try {
    if (rule.action === "pause") await ctx.platform.pauseSandbox(fresh.id);
    else await ctx.platform.deleteSandbox(fresh.id);
    return { result: "done" };
  } catch (err) {
    if (err instanceof PlatformNotFoundError) return { result: "skipped_gone" };
    return { result: "failed", detail: message(err) };
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
