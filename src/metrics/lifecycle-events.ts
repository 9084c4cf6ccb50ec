// The event ledger: every lifecycle event, from the events collector or the webhook, counted once
// by its id, into prom-client counters of the registry it is given (so a webhook arrival shows at
// the next scrape); and what churn and the team collector ask of the events seen. With shards the
// events collector passes only its own sandboxes' events, so the families are per shard.

import { Counter, Histogram, type Registry } from "prom-client";
import { counter, histogram, metricOptions, setting } from "../exposition/descriptor.js";
import {
  KILL_REASONS,
  type KillReason,
  LIFECYCLE_EVENT_TYPES,
  type LifecycleEvent,
  type LifecycleEventSink,
} from "../platform/events.js";
import { PlatformFacts } from "../platform/facts.js";
import type { Clock } from "../util/clock.js";

/** Event ids remembered at most (about 100 bytes each), whatever the horizon. */
const MAX_IDS = 200_000;
/** Recent kills remembered for churn at most. */
const MAX_KILLS = 100_000;
/** Ceiling of the templates given their own series (metrics.maxEventTemplates sets fewer). */
const MAX_TEMPLATES = 2_000;
/** How far E2B's clock may run ahead of ours: the horizon keeps this much more than it must. */
const CLOCK_SKEW_MS = 5_000;
/** Distinct event types outside E2B's list exported at most; past that they count as `other`. */
const MAX_EXTRA_TYPES = 16;
/** Execution time buckets, seconds: 1 s to a day. */
const EXECUTION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400];

/** The ledger is built with poll.events (or for a feature that feeds it: the webhook). */
const ON = { on: setting("poll.events") };

export const LIFECYCLE_EVENTS = counter(
  "lifecycle_events_total",
  "Sandbox lifecycle events by type (created, killed, paused, resumed, updated, checkpointed) and template, each counted once by event id whether read from GET /events/sandboxes or delivered to the webhook.",
  ["type", "template"],
  ON,
);
export const SANDBOXES_KILLED = counter(
  "sandboxes_killed_total",
  "Sandboxes killed by template and the platform's kill reason (the killed event's kill_reason: request, timeout, admin, orphaned, base_template_missing, seal_failed, resume_failed, unknown); from GET /events/sandboxes and the webhook.",
  ["template", "reason"],
  ON,
);
export const EXECUTION_SECONDS = histogram(
  "sandbox_execution_seconds",
  "How long killed sandboxes ran, by template (the killed event's execution.execution_time); from GET /events/sandboxes and the webhook.",
  ["template"],
  ON,
);
export const EVENT_DUPLICATES = counter(
  "lifecycle_events_duplicates_total",
  "Lifecycle events received again (same event id) and not counted, by the way the copy came: poll or webhook.",
  ["via"],
  ON,
);
export const EVENTS_FOLDED = counter(
  "exporter_lifecycle_events_folded_total",
  "Lifecycle events counted under template `other` because metrics.maxEventTemplates templates already have series of their own.",
  [],
  ON,
);

/** The ledger's families. */
export const LIFECYCLE_EVENT_FAMILIES = [
  LIFECYCLE_EVENTS,
  SANDBOXES_KILLED,
  EXECUTION_SECONDS,
  EVENT_DUPLICATES,
  EVENTS_FOLDED,
] as const;

/** What churn asks of the events: why a sandbox was killed, if an event said so recently. */
export interface KillLookup {
  killReason(sandboxId: string): KillReason | undefined;
}

/** Settings of the ledger. */
export interface EventLedgerOptions {
  /** Metric name prefix, e.g. "sandbox". */
  ns: string;
  registry: Registry;
  clock: Clock;
  /** How long an event id is remembered after it arrived (poll.eventsLookbackMs + 1 h is enough). */
  horizonMs: number;
  /** Caps of the id and kill memories (tests make them small). */
  maxIds?: number;
  /**
   * Templates given their own series (metrics.maxEventTemplates); the events of any other count
   * under template `other`. Default and ceiling MAX_TEMPLATES.
   */
  maxTemplates?: number;
  maxKills?: number;
  /** Guards a platform value before it becomes a label (scrub, cut); default as is. */
  label?: (value: string) => string;
  /** Where the team an event names is learned for the other collectors (the shared facts). */
  facts?: PlatformFacts;
}

/** Told of each event the ledger counts as new (not of duplicates, nor of other shards' events). */
export type FreshEventListener = (event: LifecycleEvent) => void;

/** Counts each lifecycle event once, whichever way it came; memory bounded by time and count. */
export class EventLedger implements LifecycleEventSink, KillLookup {
  /** Who is told of each fresh event (cost), in the order they subscribed. */
  private readonly listeners: FreshEventListener[] = [];
  /** Event id -> when it arrived (clock ms); insertion order is arrival order. */
  private readonly ids = new Map<string, number>();
  /** Sandbox id -> the reason of its latest kill; oldest first. */
  private readonly kills = new Map<string, KillReason>();
  private readonly templates = new Set<string>();
  private readonly extraTypes = new Set<string>();
  /** Where the team events name is kept: the exporter's shared facts, or the ledger's own. */
  private readonly facts: PlatformFacts;
  /** The latest arrival time of an id forgotten (clock ms): ids that came at or before it may be gone. */
  private forgottenUpTo = Number.NEGATIVE_INFINITY;
  private readonly folded: Counter;
  private readonly events: Counter<"type" | "template">;
  private readonly killed: Counter<"template" | "reason">;
  private readonly execution: Histogram;
  private readonly duplicates: Counter<"via">;

  constructor(private readonly o: EventLedgerOptions) {
    this.facts = o.facts ?? new PlatformFacts();
    const registers = [o.registry];
    this.events = new Counter({
      ...metricOptions<"type" | "template">(o.ns, LIFECYCLE_EVENTS),
      registers,
    });
    this.killed = new Counter({
      ...metricOptions<"template" | "reason">(o.ns, SANDBOXES_KILLED),
      registers,
    });
    this.execution = new Histogram({
      ...metricOptions(o.ns, EXECUTION_SECONDS),
      buckets: EXECUTION_BUCKETS,
      registers,
    });
    this.duplicates = new Counter({
      ...metricOptions<"via">(o.ns, EVENT_DUPLICATES),
      registers,
    });
    this.duplicates.inc({ via: "poll" }, 0);
    this.duplicates.inc({ via: "webhook" }, 0);
    this.folded = new Counter({
      ...metricOptions(o.ns, EVENTS_FOLDED),
      registers,
    });
  }

  /** Tells `listener` of every event counted as new from now on, whichever way it came. */
  onFresh(listener: FreshEventListener): void {
    this.listeners.push(listener);
  }

  /** Counts the event unless its id was seen within the horizon; true when it was new. */
  accept(event: LifecycleEvent, via: "poll" | "webhook"): boolean {
    const now = this.o.clock.now();
    this.forget(now, false);
    if (this.ids.has(event.id)) {
      this.duplicates.inc({ via });
      return false;
    }
    // Room for this one is made only now: a copy of the oldest id still finds it above.
    this.forget(now);
    this.ids.set(event.id, now);
    const template = this.templateLabel(event.templateId);
    this.events.inc({ type: this.typeLabel(event.type), template });
    if (event.teamId !== undefined) this.facts.learnTeamId(event.teamId);
    if (event.type === "killed") {
      const reason = event.killReason ?? "unknown";
      this.killed.inc({ template, reason });
      if (event.executionSeconds !== undefined)
        this.execution.observe({ template }, event.executionSeconds);
      this.kills.delete(event.sandboxId);
      this.kills.set(event.sandboxId, reason);
      if (this.kills.size > (this.o.maxKills ?? MAX_KILLS)) {
        const oldest = this.kills.keys().next().value;
        if (oldest !== undefined) this.kills.delete(oldest);
      }
    }
    for (const listener of this.listeners) listener(event);
    return true;
  }

  /** An event of another shard's sandbox: not counted here; the team it names is learned. */
  otherShard(event: LifecycleEvent): void {
    if (event.teamId !== undefined) this.facts.learnTeamId(event.teamId);
  }

  /** The reason of the sandbox's latest kill event still remembered, if any. */
  killReason(sandboxId: string): KillReason | undefined {
    return this.kills.get(sandboxId);
  }

  /** The team of the latest event that named one (E2B's sandboxTeamId). */
  teamId(): string | undefined {
    return this.facts.learnedTeamId();
  }

  /**
   * The oldest event time (epoch ms) whose id the ledger would still know had it been counted: ids
   * go after the horizon or past the cap, so an older event could be a replay counted before.
   */
  horizon(): number {
    const now = this.o.clock.now();
    this.forget(now, false);
    return Math.max(now - this.o.horizonMs, this.forgottenUpTo + 1) + CLOCK_SKEW_MS;
  }

  /** Event ids remembered now (for tests and /status). */
  get remembered(): number {
    return this.ids.size;
  }

  /** Drops ids older than the horizon, then (making room for one more) the oldest past the cap. */
  private forget(now: number, makeRoom = true): void {
    const cutoff = now - this.o.horizonMs;
    const max = makeRoom ? (this.o.maxIds ?? MAX_IDS) : Number.POSITIVE_INFINITY;
    for (const [id, at] of this.ids) {
      if (at >= cutoff && this.ids.size < max) break;
      this.ids.delete(id);
      this.forgottenUpTo = Math.max(this.forgottenUpTo, at);
    }
  }

  /**
   * The template's label; a new template's series start with every type and reason at 0, so rates
   * exist before its first event.
   */
  private templateLabel(templateId: string): string {
    const guarded = this.o.label ? this.o.label(templateId) : templateId;
    if (this.templates.has(guarded)) return guarded;
    const cap = Math.min(this.o.maxTemplates ?? MAX_TEMPLATES, MAX_TEMPLATES);
    // `other` does not take a place of its own: the cap counts real templates only.
    const own = this.templates.size - (this.templates.has("other") ? 1 : 0);
    const template = own < cap ? guarded : "other";
    if (template === "other") this.folded.inc();
    if (this.templates.has(template)) return template;
    this.templates.add(template);
    for (const type of LIFECYCLE_EVENT_TYPES) this.events.inc({ type, template }, 0);
    for (const reason of KILL_REASONS) this.killed.inc({ template, reason }, 0);
    return template;
  }

  private typeLabel(raw: string): string {
    if ((LIFECYCLE_EVENT_TYPES as readonly string[]).includes(raw)) return raw;
    const type = this.o.label ? this.o.label(raw) : raw;
    if (this.extraTypes.has(type)) return type;
    if (this.extraTypes.size >= MAX_EXTRA_TYPES) return "other";
    this.extraTypes.add(type);
    return type;
  }
}
