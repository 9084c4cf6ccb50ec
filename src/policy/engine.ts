// Runs the policy on each fresh snapshot: safety gates, idle signal, evaluation, actions, audit.
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { Snapshot } from "../collect/snapshot.js";
import { DEFAULT_STATES } from "../config/shared-settings.js";
import type { LifecycleEvent } from "../platform/events.js";
import type { Sandbox } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { type ActivityStats, ActivityTracker, type LogReader } from "./activity.js";
import { applyRun } from "./apply-run.js";
import {
  EMPTY_MEMORY,
  type Evaluation,
  evaluatePolicy,
  type IdleEstimate,
  idOfKey,
  type PolicyMemory,
  recordActions,
} from "./evaluate.js";
import type { PolicyHooks, PolicyPlatform, PolicyResult } from "./executor.js";
import type { StateSets } from "./match.js";
import { PAUSE_BANDS, PauseClock } from "./pause-clock.js";
import { PolicyMetrics } from "./policy-metrics.js";
import type { BlockReason, PolicyOutcome, PolicyRun } from "./policy-run.js";
import type { PolicySpec } from "./policy-settings.js";
import { describe, loggedAlone, policyStatus } from "./policy-status.js";
import { retentionInput, type SnapshotRulesState } from "./retention.js";
import { RuleSummaryLog } from "./rule-summary.js";
import { dataReadAt, isSandboxDecision, targetOf, withoutGone } from "./run-data.js";
import { estimateIdle, idleAsked, sampleRules } from "./sampling.js";
import { checkUsage } from "./usage-check.js";
import { PolicyWebhook, type WebhookOptions } from "./webhook.js";

export type { BlockReason, PolicyOutcome, PolicyRun } from "./policy-run.js";

/**
 * Results that start a cooldown: every attempt, not only the successful ones, and a snapshot the
 * platform says is in use (it stays in use for a while: not asked again every cycle).
 */
const COOLS_DOWN: ReadonlySet<PolicyResult> = new Set<PolicyResult>([
  "done",
  "dry_run",
  "failed",
  "skipped_unverified",
  "skipped_in_use",
]);

export interface PolicyEngineOptions {
  spec: PolicySpec;
  platform: PolicyPlatform & { listLogs: LogReader };
  clock: Clock;
  logger: Logger;
  registry: Registry;
  namespace: string;
  /** State names; `paused` defaults to the config's default (paused, suspended). */
  states: { running: readonly string[]; paused?: readonly string[] };
  /** A run's time budget when the spec sets none (the poll interval). */
  defaultRunTimeMs: number;
  /** Picks the blast-radius samples; default Math.random. */
  random?: () => number;
  /** Posts each notice and action attempted (see PolicyWebhook). */
  webhook?: Omit<WebhookOptions, "onResult">;
  /** Told of actions done or planned and of each run's plan (cost savings). */
  hooks?: PolicyHooks;
}

/**
 * Whether an outcome starts its target's cooldown. A snapshot found used since the list cools down
 * too: its stored details are an hour old at most, and until they are read again it would be found
 * unused, and read again, every run.
 */
function coolsDown(o: PolicyOutcome): boolean {
  if (o.result === undefined) return false;
  return COOLS_DOWN.has(o.result) || (o.target === "snapshot" && o.result === "skipped_changed");
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
  private readonly summary: RuleSummaryLog;
  /** When each paused sandbox of this shard was paused (pausedFor rules). */
  private readonly pauses: PauseClock;

  constructor(private readonly o: PolicyEngineOptions) {
    this.spec = o.spec;
    this.states = {
      running: new Set(o.states.running),
      paused: new Set(o.states.paused ?? DEFAULT_STATES.paused),
    };
    this.pauses = new PauseClock(this.states.paused);
    this.activity = new ActivityTracker(
      (id, q) => o.platform.listLogs(id, q),
      o.spec.activity,
      this.states.running,
    );
    this.metrics = new PolicyMetrics(o.registry, o.namespace);
    this.metrics.setRules(o.spec);
    this.log = o.logger.child({ component: "policy" });
    this.summary = new RuleSummaryLog(this.log, () => o.clock.now());
    const webhook = o.webhook;
    this.webhook = webhook
      ? new PolicyWebhook({
          ...webhook,
          onResult: (result) => this.metrics.webhook.inc({ result }),
        })
      : undefined;
  }

  /** A fresh lifecycle event of this shard's sandboxes: a pause starts its clock. */
  onEvent(e: LifecycleEvent): void {
    this.pauses.onEvent(e);
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
    // One rule set for the whole run: a reload while it awaits applies from the next run.
    const spec = this.spec;
    const now = this.o.clock.now();
    const blocked = this.blockReason(snapshot, now, spec);
    this.lastCycle = snapshot.cycle;
    // The walk kept only this shard's sandboxes: every one of them is ours to act on.
    const list = snapshot.sandboxes ?? [];
    const own: readonly Sandbox[] = Array.isArray(list) ? list : Array.from(list);
    this.observePauses(snapshot, own, now);
    if (blocked) return this.blockedRun(snapshot.cycle, now, blocked);
    const budgetMs = spec.maxRunTimeMs ?? this.o.defaultRunTimeMs;
    const until = now + budgetMs;
    const signals = await this.readSignals(spec, own, now, until);
    const { read } = signals;
    // A sandbox gone since the walk (its log read found none) is in no share and no decision.
    const live =
      read.gone.size > 0
        ? withoutGone(own, signals.samples, read.gone)
        : { own, samples: signals.samples };
    const estimates = estimateIdle(spec, live.samples, read.activity, now, signals.busy);
    const retention = retentionInput(spec, snapshot, own, now);
    if (retention?.state === "blocked")
      this.metrics.blocked.inc({ reason: "snapshots_incomplete" });
    const evaluation = evaluatePolicy({
      sandboxes: live.own,
      activity: signals.activity,
      spec,
      states: this.states,
      memory: this.memory,
      now,
      estimates,
      pausedSince: (id) => this.pauses.pausedSince(id),
      ...(retention?.input ? { snapshots: retention.input } : {}),
    });
    const outcomes = await applyRun(
      evaluation.decisions,
      {
        spec,
        current: () => this.spec,
        snapshotAt: dataReadAt(snapshot),
        until,
        facts: retention?.input?.facts,
      },
      {
        platform: this.o.platform,
        activity: this.activity,
        spec,
        states: this.states,
        now: () => this.o.clock.now(),
        ...(this.o.hooks ? { onApplied: this.o.hooks.onApplied } : {}),
      },
      (o) => this.audit(o),
    );
    this.metrics.countDecisions(outcomes);
    this.o.hooks?.onPlan(now, evaluation.decisions.filter(isSandboxDecision));
    return this.recordRun(
      {
        cycle: snapshot.cycle,
        spec,
        now,
        budgetMs,
        stats: read.stats,
        ...(retention ? { snapshots: retention.state } : {}),
      },
      {
        evaluation,
        outcomes,
        estimates,
      },
    );
  }

  /**
   * The idle signals of a run: the rules' samples, the last activity of the sandboxes an idle
   * condition asks about (log reads, within the budget), and those busy by their CPU usage.
   */
  private async readSignals(spec: PolicySpec, own: readonly Sandbox[], now: number, until: number) {
    const clock = () => this.o.clock.now();
    const samples = sampleRules(spec, own, this.states, now, this.o.random ?? Math.random);
    const sample = new Set([...samples.values()].flat());
    const asked = idleAsked(spec, own, this.states, now);
    const cooling = this.cooling();
    // A sandbox first found idle now is acted on consecutiveCycles runs later: knowing that many
    // runs' worth of actions keeps every run's budget filled (and no more is read).
    const enough = spec.maxActionsPerCycle * spec.consecutiveCycles;
    const read = await this.activity.lastActivity(asked, now, {
      options: spec.activity,
      sample,
      enough,
      spent: cooling,
      until,
      clock,
    });
    this.metrics.observeActivity(read.stats);
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
    return { samples, read, activity, busy: busy?.busy };
  }

  /** Records a run that evaluated: memory, metrics, the warning and rule summary, `lastRun`. */
  private recordRun(
    run: {
      cycle: number;
      spec: PolicySpec;
      now: number;
      budgetMs: number;
      stats: ActivityStats;
      snapshots?: SnapshotRulesState;
    },
    done: {
      evaluation: Evaluation;
      outcomes: PolicyOutcome[];
      estimates: Map<string, IdleEstimate>;
    },
  ): PolicyRun {
    const { cycle, spec, now, budgetMs, stats } = run;
    const { evaluation, outcomes } = done;
    const overBudget = stats.unread > 0 || outcomes.some((o) => o.result === "skipped_time_budget");
    if (overBudget) this.metrics.runsCut.inc();
    this.warnRun(cycle, stats, overBudget, budgetMs);
    // Failed and unverified attempts cool down too: a call that keeps failing is not repeated
    // every cycle, nor does it hold the rule's budget.
    const acted = outcomes.filter(coolsDown);
    this.memory = recordActions(evaluation.memory, acted.map(targetOf), now);
    // A reload during the run already set the new rules' gauges.
    if (spec === this.spec)
      for (const [rule, n] of Object.entries(evaluation.candidates))
        this.metrics.candidates.set({ rule }, n);
    for (const rule of evaluation.blastRadius) this.metrics.blastRadius.inc({ rule });
    this.summary.summarize(spec, outcomes, evaluation.blastRadius);
    this.metrics.lastRun.set(now / 1000);
    const durationMs = this.o.clock.now() - now;
    this.metrics.runSeconds.set(durationMs / 1000);
    this.last = {
      at: now,
      cycle,
      outcomes,
      candidates: evaluation.candidates,
      blastRadius: evaluation.blastRadius,
      logReads: stats.reads,
      durationMs,
      budgetMs,
      overBudget,
      estimates: Object.fromEntries(done.estimates),
      ...(run.snapshots ? { snapshots: run.snapshots } : {}),
    };
    return this.last;
  }

  /** Follows the pauses of a complete walk, and shows them by time paused. */
  private observePauses(snapshot: Snapshot, own: readonly Sandbox[], now: number): void {
    if (!snapshot.sandboxesComplete || !snapshot.collectors.sandboxes.success) return;
    this.pauses.observe(own, snapshot.collectors.sandboxes.lastAttemptAt, snapshot.finishedAt);
    this.pauses.bands(now).forEach((n, i) => {
      this.metrics.pausedSandboxes.set({ paused_for: PAUSE_BANDS[i]?.label ?? "" }, n);
    });
  }

  /** A run that acted on nothing: the snapshot was incomplete, stale or the platform down. */
  private blockedRun(cycle: number, now: number, blocked: BlockReason): PolicyRun {
    // "In a row" means fresh snapshots without a gap: a blocked run breaks every streak.
    this.memory = { streaks: new Map(), lastAction: this.memory.lastAction };
    this.metrics.blocked.inc({ reason: blocked });
    this.log.warn({ cycle, reason: blocked }, "policy blocked: no action");
    this.last = {
      at: now,
      cycle,
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

  /**
   * One run-level line, only when something went wrong: reads failed (a sandbox gone since the
   * walk is no failure), or the budget was spent.
   */
  private warnRun(
    cycle: number,
    stats: ActivityStats,
    overBudget: boolean,
    budgetMs: number,
  ): void {
    if (stats.errors === 0 && !overBudget) return;
    this.log.warn(
      {
        cycle,
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
  }

  /** The plan for /status: the latest run's decisions, actions first. */
  status(): Record<string, unknown> {
    return policyStatus(this.spec, this.last);
  }

  private blockReason(s: Snapshot, now: number, spec: PolicySpec): BlockReason | undefined {
    if (!s.sandboxesComplete || !s.collectors.sandboxes.success) return "incomplete";
    if (now - dataReadAt(s) > spec.maxSnapshotAgeMs) return "stale";
    if (!s.collectors.health.success || s.health?.up !== true) return "health_down";
    return undefined;
  }

  /** Ids an action took recently (dry-run too): their cooldown keeps this run from acting again. */
  private cooling(): Set<string> {
    return new Set([...this.memory.lastAction.keys()].map(idOfKey));
  }

  /** Logs the decisions that stand alone (actions attempted, notices) and posts them. */
  private audit(o: PolicyOutcome): void {
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
