// A run's decisions applied one at a time (the rate limit is the per-cycle cap): pending and
// skipped ones as they are, "act" ones through the executor of their target, each audited as soon
// as it is known. An action is given up when the rules were reloaded, the snapshot grew too old or
// the run's time budget is spent.
import type { SnapshotFact } from "../collect/storage/snapshot-facts.js";
import type { PolicyDecision } from "./evaluate.js";
import { applyDecision, type ExecutorContext } from "./executor.js";
import type { PolicyOutcome } from "./policy-run.js";
import type { PolicySpec, SettledRule, SettledSnapshotRule } from "./policy-settings.js";
import { applySnapshotDecision } from "./snapshot-executor.js";

/** What one run acts with. */
export interface RunToApply {
  spec: PolicySpec;
  /** The rules in force now: a reload during the run stops its mutations. */
  current: () => PolicySpec;
  /** Epoch ms the oldest data the run acts on was read. */
  snapshotAt: number;
  /** Epoch ms the run's time budget ends. */
  until: number;
  /** The snapshots' facts the retention rules were evaluated on. */
  facts?: ReadonlyMap<string, SnapshotFact> | undefined;
}

/** Applies `decisions` in order; `audit` is told of each outcome. */
export async function applyRun(
  decisions: readonly PolicyDecision[],
  run: RunToApply,
  ctx: ExecutorContext,
  audit: (o: PolicyOutcome) => void,
): Promise<PolicyOutcome[]> {
  const { spec } = run;
  const rules = new Map(spec.rules.map((r) => [r.name, r]));
  const snapshotRules = new Map(spec.snapshotRules.map((r) => [r.name, r]));
  const out: PolicyOutcome[] = [];
  for (const d of decisions) {
    let outcome: PolicyOutcome;
    if (d.outcome === "pending") outcome = { ...d };
    else if (d.outcome !== "act") outcome = { ...d, result: d.outcome };
    else if (!d.dryRun && run.current() !== spec)
      outcome = { ...d, result: "skipped_changed", detail: "rules reloaded during the run" };
    else if (!d.dryRun && ctx.now() - run.snapshotAt > spec.maxSnapshotAgeMs)
      outcome = { ...d, result: "skipped_stale", detail: "snapshot grew too old during the run" };
    else if (ctx.now() >= run.until)
      outcome = { ...d, result: "skipped_time_budget", detail: "the run's time budget is spent" };
    else if (d.target === "snapshot") {
      const rule = snapshotRules.get(d.rule) as SettledSnapshotRule;
      const fact = run.facts?.get(d.snapshotId);
      outcome = { ...d, ...(await applySnapshotDecision(d, rule, fact, ctx)) };
    } else outcome = { ...d, ...(await applyDecision(d, rules.get(d.rule) as SettledRule, ctx)) };
    out.push(outcome);
    audit(outcome);
  }
  return out;
}
