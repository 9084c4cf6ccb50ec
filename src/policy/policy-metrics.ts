// The policy's metric families in the registry the caller owns.
import { Counter, Gauge, type Registry } from "prom-client";
import { counter, gauge, metricOptions, setting } from "../exposition/descriptor.js";
import type { ActivityStats } from "./activity.js";
import type { PolicyResult } from "./executor.js";
import { PAUSE_BANDS } from "./pause-clock.js";
import type { PolicyOutcome } from "./policy-run.js";
import { allRules, type PolicySpec } from "./policy-settings.js";

/** Results of an attempted action that dashboards and rules read, at 0 for every rule from its load. */
const COUNTED_RESULTS = ["done", "dry_run", "failed"] as const satisfies readonly PolicyResult[];

const ON = { on: setting("policy.enabled") };

export const POLICY_PAUSED_SANDBOXES = gauge(
  "policy_paused_sandboxes",
  "This shard's paused sandboxes by time since their pause (the paused event's time where events are read, else the first walk that saw it paused; a restart without events starts the clock again).",
  ["paused_for"],
  ON,
);
export const POLICY_CANDIDATES = gauge(
  "policy_candidates",
  "Sandboxes that match each rule and meet its conditions in the last evaluation (protected ones excluded).",
  ["rule"],
  ON,
);
export const POLICY_DECISIONS = counter(
  "policy_decisions_total",
  "Policy decisions by rule, action and result (dry_run, done, failed, skipped_*).",
  ["rule", "action", "result"],
  ON,
);
export const POLICY_LAST_RUN = gauge(
  "policy_last_run_timestamp_seconds",
  "When the policy last evaluated a fresh, complete snapshot (epoch seconds).",
  [],
  ON,
);
export const POLICY_RUN_SECONDS = gauge(
  "policy_run_duration_seconds",
  "Wall time of the last policy run: idle-signal reads, evaluation and actions.",
  [],
  ON,
);
export const POLICY_WEBHOOK_DELIVERIES = counter(
  "policy_webhook_deliveries_total",
  "Policy notices and actions posted to policy.webhook.url: ok, failed (after its retries) or dropped (queue full).",
  ["result"],
  ON,
);
export const POLICY_USAGE_READS = counter(
  "policy_usage_reads_total",
  "Batched reads of sandbox resource usage (GET /sandboxes/metrics) for the idle signal, ok or error.",
  ["result"],
  ON,
);
export const POLICY_RUNS_OVER_BUDGET = counter(
  "policy_runs_over_time_budget_total",
  "Policy runs stopped (no more reads or actions) because they took longer than policy.maxRunTime.",
  [],
  ON,
);
export const POLICY_BLOCKED = counter(
  "policy_blocked_total",
  "Policy runs that acted on nothing because the snapshot was incomplete, stale or the platform unhealthy; snapshots_incomplete: the retention rules alone were held (no complete, fresh snapshot list).",
  ["reason"],
  ON,
);
export const POLICY_BLAST_RADIUS_STOPS = counter(
  "policy_blast_radius_stops_total",
  "Evaluations in which a rule would have acted on more than maxMatchPercent of what it looked at, and so acted on none.",
  ["rule"],
  ON,
);
export const POLICY_ACTIVITY_READS = counter(
  "policy_activity_reads_total",
  "Log reads of the idle signal (GET /v2/sandboxes/{id}/logs), by result: ok, error, or gone (404: the sandbox ended after the walk).",
  ["result"],
  ON,
);
export const POLICY_ACTIVITY_CACHE_HITS = counter(
  "policy_activity_cache_hits_total",
  "Idle-signal lookups answered from the cache (the sandbox cannot be idle yet).",
  [],
  ON,
);
export const POLICY_DRY_RUN = gauge(
  "policy_dry_run",
  "1 when a rule runs in dry-run (no mutating call), 0 when it acts.",
  ["rule"],
  ON,
);
export const POLICY_FAMILIES = [
  POLICY_PAUSED_SANDBOXES,
  POLICY_CANDIDATES,
  POLICY_DECISIONS,
  POLICY_LAST_RUN,
  POLICY_RUN_SECONDS,
  POLICY_WEBHOOK_DELIVERIES,
  POLICY_USAGE_READS,
  POLICY_RUNS_OVER_BUDGET,
  POLICY_BLOCKED,
  POLICY_BLAST_RADIUS_STOPS,
  POLICY_ACTIVITY_READS,
  POLICY_ACTIVITY_CACHE_HITS,
  POLICY_DRY_RUN,
] as const;

/** Registers the policy families and feeds them from each run. */
export class PolicyMetrics {
  readonly candidates: Gauge<"rule">;
  readonly decisions: Counter<"rule" | "action" | "result">;
  readonly lastRun: Gauge;
  readonly runSeconds: Gauge;
  readonly runsCut: Counter;
  readonly webhook: Counter<"result">;
  readonly usageReads: Counter<"result">;
  readonly blocked: Counter<"reason">;
  readonly blastRadius: Counter<"rule">;
  readonly activityReads: Counter<"result">;
  readonly activityCacheHits: Counter;
  readonly dryRun: Gauge<"rule">;
  readonly pausedSandboxes: Gauge<"paused_for">;

  constructor(registry: Registry, ns = "sandbox") {
    this.pausedSandboxes = new Gauge({
      ...metricOptions<"paused_for">(ns, POLICY_PAUSED_SANDBOXES),
      registers: [registry],
    });
    const registers = [registry];
    this.candidates = new Gauge({ ...metricOptions<"rule">(ns, POLICY_CANDIDATES), registers });
    this.decisions = new Counter({
      ...metricOptions<"rule" | "action" | "result">(ns, POLICY_DECISIONS),
      registers,
    });
    this.lastRun = new Gauge({ ...metricOptions(ns, POLICY_LAST_RUN), registers });
    this.runSeconds = new Gauge({ ...metricOptions(ns, POLICY_RUN_SECONDS), registers });
    this.webhook = new Counter({
      ...metricOptions<"result">(ns, POLICY_WEBHOOK_DELIVERIES),
      registers,
    });
    this.usageReads = new Counter({
      ...metricOptions<"result">(ns, POLICY_USAGE_READS),
      registers,
    });
    this.runsCut = new Counter({ ...metricOptions(ns, POLICY_RUNS_OVER_BUDGET), registers });
    this.blocked = new Counter({ ...metricOptions<"reason">(ns, POLICY_BLOCKED), registers });
    this.blastRadius = new Counter({
      ...metricOptions<"rule">(ns, POLICY_BLAST_RADIUS_STOPS),
      registers,
    });
    this.activityReads = new Counter({
      ...metricOptions<"result">(ns, POLICY_ACTIVITY_READS),
      registers,
    });
    this.activityCacheHits = new Counter({
      ...metricOptions(ns, POLICY_ACTIVITY_CACHE_HITS),
      registers,
    });
    this.dryRun = new Gauge({ ...metricOptions<"rule">(ns, POLICY_DRY_RUN), registers });
    for (const reason of ["incomplete", "stale", "health_down"]) this.blocked.inc({ reason }, 0);
    for (const band of PAUSE_BANDS) this.pausedSandboxes.set({ paused_for: band.label }, 0);
    for (const result of ["ok", "error", "gone"]) this.activityReads.inc({ result }, 0);
  }

  /** Sets the per-rule gauges for a (re)loaded spec; families of removed rules disappear. */
  setRules(spec: PolicySpec): void {
    this.candidates.reset();
    this.dryRun.reset();
    if (spec.snapshotRules.length > 0) this.blocked.inc({ reason: "snapshots_incomplete" }, 0);
    for (const r of allRules(spec)) {
      this.candidates.set({ rule: r.name }, 0);
      this.dryRun.set({ rule: r.name }, r.dryRun ? 1 : 0);
      this.blastRadius.inc({ rule: r.name }, 0);
      for (const result of COUNTED_RESULTS)
        this.decisions.inc({ rule: r.name, action: r.action, result }, 0);
    }
  }

  /**
   * Counts a run's decisions, one counter call per (rule, action, result): a retention rule over a
   * hundred thousand snapshots decides that many times a run.
   */
  countDecisions(outcomes: readonly PolicyOutcome[]): void {
    const counts = new Map<string, { rule: string; action: string; result: string; n: number }>();
    for (const o of outcomes) {
      if (o.result === undefined) continue;
      const key = `${o.rule}\0${o.action}\0${o.result}`;
      const c = counts.get(key);
      if (c) c.n++;
      else counts.set(key, { rule: o.rule, action: o.action, result: o.result, n: 1 });
    }
    for (const { n, ...labels } of counts.values()) this.decisions.inc(labels, n);
  }

  /** Counts one round of idle-signal reads. */
  observeActivity(stats: ActivityStats): void {
    this.activityReads.inc({ result: "ok" }, stats.reads - stats.errors - stats.gone);
    this.activityReads.inc({ result: "error" }, stats.errors);
    this.activityReads.inc({ result: "gone" }, stats.gone);
    this.activityCacheHits.inc(stats.cacheHits);
  }
}
