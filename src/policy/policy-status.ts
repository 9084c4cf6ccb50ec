// How a run's decisions are shown: the plan on /status, and the one line (audit log, webhook) of
// each decision that stands alone.

import type { PolicyResult } from "./executor.js";
import type { PolicyOutcome, PolicyRun } from "./policy-run.js";
import { allRules, type PolicySpec } from "./policy-settings.js";
import type { PolicyEvent } from "./webhook.js";

/** Entries of the plan shown on /status; the counts cover all of them. */
const PLAN_ENTRIES = 200;

/** The plan for /status: the latest run's decisions, actions first. */
export function policyStatus(spec: PolicySpec, r: PolicyRun | undefined): Record<string, unknown> {
  const rules = allRules(spec).map((rule) => ({
    name: rule.name,
    ...(rule.target === "snapshot" ? { target: rule.target } : {}),
    action: rule.action,
    dryRun: rule.dryRun,
    candidates: r?.candidates[rule.name] ?? 0,
    ...(r?.estimates[rule.name] ? { sample: r.estimates[rule.name] } : {}),
  }));
  if (!r) return { lastRun: null, rules, plan: [] };
  const order = (o: PolicyOutcome): number =>
    o.result === undefined ? 2 : o.result === "done" || o.result === "dry_run" ? 0 : 1;
  const plan = [...r.outcomes].sort((a, b) => order(a) - order(b)).slice(0, PLAN_ENTRIES);
  return {
    lastRun: new Date(r.at).toISOString(),
    cycle: r.cycle,
    blocked: r.blocked ?? null,
    ...(r.snapshots ? { snapshots: r.snapshots } : {}),
    blastRadius: r.blastRadius,
    logReads: r.logReads,
    durationSeconds: r.durationMs / 1000,
    timeBudgetSeconds: r.budgetMs / 1000,
    overTimeBudget: r.overBudget,
    rules,
    decisions: r.outcomes.length,
    plan: plan.map(describe),
  };
}

/** Results logged one line each: what was attempted. Everything else goes in the rule summary. */
const ATTEMPTED: ReadonlySet<PolicyResult | undefined> = new Set<PolicyResult | undefined>([
  "dry_run",
  "done",
  "failed",
]);

/** An action attempted, or a notice: its own audit line. */
export function loggedAlone(o: PolicyOutcome): boolean {
  return ATTEMPTED.has(o.result) || (o.result === undefined && o.notice === true);
}

/** One decision as /status, the audit line and the webhook show it. */
export function describe(o: PolicyOutcome): Omit<PolicyEvent, "at"> {
  const what =
    o.target === "snapshot"
      ? { target: o.target, snapshot: o.snapshotId, names: o.names }
      : { sandbox: o.sandboxId, template: o.templateId, state: o.state };
  return {
    rule: o.rule,
    ...what,
    action: o.action,
    dryRun: o.dryRun,
    result: o.result ?? "pending",
    reason: o.detail ? `${o.reason}; ${o.detail}` : o.reason,
  };
}
