// Runs the policy on each fresh snapshot: safety gates, idle signal, evaluation, actions, audit.
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { Snapshot } from "../collect/snapshot.js";
import type { Sandbox } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { LogLimiter } from "../util/log-limiter.js";
import { ActivityTracker, type LogReader } from "./activity.js";
import {
  EMPTY_MEMORY,
  type Evaluation,
  evaluatePolicy,
  idOfKey,
  type PolicyMemory,
  recordActions,
} from "./evaluate.js";
import {
  applyDecision,
  type PolicyHooks,
  type PolicyPlatform,
  type PolicyResult,
} from "./executor.js";
import { cheapMatch, type StateSets } from "./match.js";
import { PolicyMetrics } from "./policy-metrics.js";
import type { BlockReason, PolicyOutcome, PolicyRun } from "./policy-run.js";
import type { PolicySpec, SettledRule } from "./policy-settings.js";
import { describe, loggedAlone, policyStatus } from "./policy-status.js";
import { estimateIdle, sampleRules } from "./sampling.js";
import { checkUsage } from "./usage-check.js";
import { PolicyWebhook, type WebhookOptions } from "./webhook.js";

export type { BlockReason, PolicyOutcome, PolicyRun } from "./policy-run.js";

/** Results that start a sandbox's cooldown: every attempt, not only the successful ones. */
const COOLS_DOWN: ReadonlySet<PolicyResult> = new Set<PolicyResult>([
  "done",
  "dry_run",
  "failed",
  "skipped_unverified",
]);

/** A rule stopped by its blast radius run after run is said once a minute, with a count. */
const TOO_MANY_LOG_INTERVAL_MS = 60_000;

export interface PolicyEngineOptions {
  spec: PolicySpec;
  platform: PolicyPlatform & { listLogs: LogReader };
  clock: Clock;
  logger: Logger;
  registry: Registry;
  namespace: string;
  states: { running: readonly string[] };
  /** A run's time budget when the spec sets none (the poll interval). */
  defaultRunTimeMs: number;
  /** Picks the blast-radius samples; default Math.random. */
  random?: () => number;
  /** Posts each notice and action attempted (see PolicyWebhook). */
  webhook?: Omit<WebhookOptions, "onResult">;
  /** Told of actions done or planned and of each run's plan (cost savings). */
  hooks?: PolicyHooks;
}

/** The policy engine: call `run` after each poll cycle with its snapshot. */
export class PolicyEngine {
  private spec: PolicySpec;
  private memory: PolicyMemory = EMPTY_MEMORY;
  private lastCycle = 0;
  private last: PolicyRun | undefined;
  private readonly states: StateSets;
  private readonly activity: ActivityTracker;
  private readonly metrics: PolicyMetrics;
  private readonly log: Logger;
  private readonly webhook: PolicyWebhook | undefined;
  private readonly tooMany: LogLimiter;

  constructor(private readonly o: PolicyEngineOptions) {
    this.spec = o.spec;
    this.tooMany = new LogLimiter({
      intervalMs: TOO_MANY_LOG_INTERVAL_MS,
      now: () => o.clock.now(),
    });
    this.states = { running: new Set(o.states.running) };
    this.activity = new ActivityTracker(
      (id, q) => o.platform.listLogs(id, q),
      o.spec.activity,
      this.states.running,
    );
    this.metrics = new PolicyMetrics(o.registry, o.namespace);
    this.metrics.setRules(o.spec);
    this.log = o.logger.child({ component: "policy" });
    const webhook = o.webhook;
    this.webhook = webhook
      ? new PolicyWebhook({
          ...webhook,
          onResult: (result) => this.metrics.webhook.inc({ result }),
        })
      : undefined;
  }

  /** Resolves when every queued webhook delivery was made or given up (tests, shutdown). */
  async webhookIdle(): Promise<void> {
    await this.webhook?.idle();
  }

  /** Replaces the rules (reload); streaks and cooldowns of rules that remain are kept. */
  setSpec(spec: PolicySpec): void {
    this.spec = spec;
    this.activity.setOptions(spec.activity);
    this.metrics.setRules(spec);
  }

  /** The latest run, if any. */
  get lastRun(): PolicyRun | undefined {
    return this.last;
  }

  /** Evaluates the snapshot and applies the decisions; never acts on stale or partial data. */
  async run(snapshot: Snapshot): Promise<PolicyRun> {
    // A snapshot counts once towards consecutiveCycles, however often it is offered.
    if (this.last && snapshot.cycle <= this.lastCycle) return this.last;
    const now = this.o.clock.now();
    const blocked = this.blockReason(snapshot, now);
    this.lastCycle = snapshot.cycle;
    if (blocked) {
      // "In a row" means fresh snapshots without a gap: a blocked run breaks every streak.
      this.memory = { streaks: new Map(), lastAction: this.memory.lastAction };
      this.metrics.blocked.inc({ reason: blocked });
      this.log.warn({ cycle: snapshot.cycle, reason: blocked }, "policy blocked: no action");
      this.last = {
        at: now,
        cycle: snapshot.cycle,
        blocked,
        outcomes: [],
        candidates: {},
        blastRadius: [],
        logReads: 0,
        durationMs: 0,
        budgetMs: 0,
        overBudget: false,
        estimates: {},
      };
      return this.last;
    }
    const spec = this.spec;
    const budgetMs = spec.maxRunTimeMs ?? this.o.defaultRunTimeMs;
    const until = now + budgetMs;
    const clock = () => this.o.clock.now();
    // The walk kept only this shard's sandboxes: every one of them is ours to act on.
    const list = snapshot.sandboxes ?? [];
    const own: readonly Sandbox[] = Array.isArray(list) ? list : Array.from(list);
    const samples = sampleRules(this.spec, own, this.states, now, this.o.random ?? Math.random);
    const sample = new Set([...samples.values()].flat());
    const asked = this.idleAsked(own, now);
    const cooling = this.cooling();
    // A sandbox first found idle now is acted on consecutiveCycles runs later: knowing that many
    // runs' worth of actions keeps every run's budget filled (and no more is read).
    const enough = spec.maxActionsPerCycle * spec.consecutiveCycles;
    const read = await this.activity.lastActivity(asked, now, {
      sample,
      enough,
      spent: cooling,
      until,
      clock,
    });
    const { stats } = read;
    this.metrics.observeActivity(stats);
    const activity = new Map<string, number | undefined>();
    for (const [id, a] of read.activity) activity.set(id, a.at);
    const busy = spec.activity.usage
      ? await checkUsage({
          platform: this.o.platform,
          metrics: this.metrics,
          memory: this.memory,
          asked,
          activity,
          sample,
          cooling,
          enough,
          spec,
          now,
          budget: { until, clock },
        })
      : undefined;
    const estimates = estimateIdle(this.spec, samples, read.activity, now, busy?.busy);
    const evaluation = evaluatePolicy({
      sandboxes: own,
      activity,
      spec,
      states: this.states,
      memory: this.memory,
      now,
      estimates,
    });
    const outcomes = await this.apply(evaluation, spec, dataReadAt(snapshot), until);
    this.o.hooks?.onPlan(now, evaluation.decisions);
    const overBudget = stats.unread > 0 || outcomes.some((o) => o.result === "skipped_time_budget");
    if (overBudget) this.metrics.runsCut.inc();
    // One run-level line, only when something went wrong: read errors, the budget spent.
    if (stats.errors > 0 || overBudget)
      this.log.warn(
        {
          cycle: snapshot.cycle,
          readErrors: stats.errors,
          reads: stats.reads,
          firstError: stats.firstError,
          overBudget,
          unread: stats.unread,
          budgetSeconds: budgetMs / 1000,
        },
        overBudget
          ? "policy run over its time budget: it stopped reading and acting"
          : "idle-signal log reads failed; those sandboxes count as active",
      );
    // Failed and unverified attempts cool down too: a call that keeps failing is not repeated
    // every cycle, nor does it hold the rule's budget.
    const acted = outcomes.filter((d) => d.result !== undefined && COOLS_DOWN.has(d.result));
    this.memory = recordActions(evaluation.memory, acted, now);
    // A reload during the run already set the new rules' gauges.
    if (spec === this.spec)
      for (const [rule, n] of Object.entries(evaluation.candidates))
        this.metrics.candidates.set({ rule }, n);
    for (const rule of evaluation.blastRadius) this.metrics.blastRadius.inc({ rule });
    this.summarize(spec, outcomes, evaluation.blastRadius);
    this.metrics.lastRun.set(now / 1000);
    const durationMs = this.o.clock.now() - now;
    this.metrics.runSeconds.set(durationMs / 1000);
    this.last = {
      at: now,
      cycle: snapshot.cycle,
      outcomes,
      candidates: evaluation.candidates,
      blastRadius: evaluation.blastRadius,
      logReads: stats.reads,
      durationMs,
      budgetMs,
      overBudget,
      estimates: Object.fromEntries(estimates),
    };
    return this.last;
  }

  /**
   * One line per rule that decided anything without acting (pending, skipped_*): the counts by
   * result. With one line per action and per notice, a run logs at most actions + notices +
   * rules + 1 lines, however many sandboxes each rule passes over.
   */
  private summarize(spec: PolicySpec, outcomes: readonly PolicyOutcome[], stopped: string[]): void {
    const byRule = new Map<string, Record<string, number>>();
    for (const o of outcomes) {
      if (loggedAlone(o)) continue;
      const counts = byRule.get(o.rule) ?? {};
      const result = o.result ?? "pending";
      counts[result] = (counts[result] ?? 0) + 1;
      byRule.set(o.rule, counts);
    }
    for (const rule of spec.rules) {
      const counts = byRule.get(rule.name);
      if (!counts) continue;
      const line = { audit: true, rule: rule.name, action: rule.action, skipped: counts };
      if (stopped.includes(rule.name))
        this.tooMany.warn(
          this.log,
          rule.name,
          line,
          "policy rule would act on too many sandboxes: acting on none",
        );
      else this.log.info(line, "policy rule summary");
    }
  }

  /** The plan for /status: the latest run's decisions, actions first. */
  status(): Record<string, unknown> {
    return policyStatus(this.spec, this.last);
  }

  private blockReason(s: Snapshot, now: number): BlockReason | undefined {
    if (!s.sandboxesComplete || !s.collectors.sandboxes.success) return "incomplete";
    if (now - dataReadAt(s) > this.spec.maxSnapshotAgeMs) return "stale";
    if (!s.collectors.health.success || s.health?.up !== true) return "health_down";
    return undefined;
  }

  /** Ids an action took recently (dry-run too): their cooldown keeps this run from acting again. */
  private cooling(): Set<string> {
    return new Set([...this.memory.lastAction.keys()].map(idOfKey));
  }

  /** Sandbox -> the shortest idleFor asked of it, over rules whose cheap filters it passes. */
  private idleAsked(own: readonly Sandbox[], now: number): Map<Sandbox, number> {
    const asked = new Map<Sandbox, number>();
    const idleRules = this.spec.rules.filter(
      (r): r is SettledRule & { idleFor: number } => r.idleFor !== undefined,
    );
    if (idleRules.length === 0) return asked;
    for (const s of own) {
      for (const r of idleRules) {
        if (!cheapMatch(r, s, this.states, now)) continue;
        const prev = asked.get(s);
        if (prev === undefined || r.idleFor < prev) asked.set(s, r.idleFor);
      }
    }
    return asked;
  }

  /** Acts on "act" decisions one at a time (the rate limit is the per-cycle cap), audits each. */
  private async apply(
    evaluation: Evaluation,
    spec: PolicySpec,
    snapshotAt: number,
    until: number,
  ): Promise<PolicyOutcome[]> {
    const rules = new Map(spec.rules.map((r) => [r.name, r]));
    const ctx = {
      platform: this.o.platform,
      activity: this.activity,
      spec,
      states: this.states,
      now: () => this.o.clock.now(),
      ...(this.o.hooks ? { onApplied: this.o.hooks.onApplied } : {}),
    };
    const out: PolicyOutcome[] = [];
    for (const d of evaluation.decisions) {
      let outcome: PolicyOutcome;
      if (d.outcome === "pending") outcome = { ...d };
      else if (d.outcome !== "act") outcome = { ...d, result: d.outcome };
      else if (!d.dryRun && this.spec !== spec)
        outcome = { ...d, result: "skipped_changed", detail: "rules reloaded during the run" };
      else if (!d.dryRun && ctx.now() - snapshotAt > spec.maxSnapshotAgeMs)
        outcome = { ...d, result: "skipped_stale", detail: "snapshot grew too old during the run" };
      else if (ctx.now() >= until)
        outcome = { ...d, result: "skipped_time_budget", detail: "the run's time budget is spent" };
      else outcome = { ...d, ...(await applyDecision(d, rules.get(d.rule) as SettledRule, ctx)) };
      out.push(outcome);
      this.audit(outcome);
    }
    return out;
  }

  /** Counts every decision; logs the ones that stand alone (actions attempted, notices). */
  private audit(o: PolicyOutcome): void {
    if (o.result !== undefined)
      this.metrics.decisions.inc({ rule: o.rule, action: o.action, result: o.result });
    if (!loggedAlone(o)) return;
    const line = { audit: true, ...describe(o) };
    this.webhook?.send({
      ...describe(o),
      result: o.result ?? "notice",
      at: new Date(this.o.clock.now()).toISOString(),
    });
    if (o.result === undefined) this.log.info(line, "policy notice");
    else if (o.result === "failed") this.log.warn(line, "policy decision");
    else this.log.info(line, "policy decision");
  }
}

/**
 * Epoch ms the oldest data a run acts on was read: the walk's start (its first pages are as old
 * as that) and, when it succeeded, the health read's. Nothing else in the snapshot (an unsupported
 * collector's outcome, one still reading) ages it.
 */
function dataReadAt(s: Snapshot): number {
  const { sandboxes, health } = s.collectors;
  return Math.min(sandboxes.lastAttemptAt, health.success ? health.lastAttemptAt : Infinity);
}
