// E2B's sandbox lifecycle events, as the events collector and the webhook receiver both read them.

/** Event types, without the `sandbox.lifecycle.` prefix; every one is exported at 0 per template. */
export const LIFECYCLE_EVENT_TYPES = [
  "created",
  "killed",
  "paused",
  "resumed",
  "updated",
  "checkpointed",
] as const;

/**
 * E2B's kill reasons (the API's list, then the orchestrator's `seal_failed` and `resume_failed`);
 * a reason outside it is exported as `unknown`.
 */
export const KILL_REASONS = [
  "request",
  "timeout",
  "admin",
  "orphaned",
  "base_template_missing",
  "seal_failed",
  "resume_failed",
  "unknown",
] as const;

export type KillReason = (typeof KILL_REASONS)[number];

/** One lifecycle event, normalized from the events API or a webhook delivery. */
export interface LifecycleEvent {
  /** The event's id: the key that de-duplicates (an event read twice, or by both ways, counts once). */
  id: string;
  /** Short type (`killed`); a type E2B adds later is kept as sent, lower-cased. */
  type: string;
  sandboxId: string;
  /** "" when the event does not say. */
  templateId: string;
  executionId?: string;
  buildId?: string;
  teamId?: string;
  /** Epoch ms. */
  timestamp: number;
  /** Killed events: one of KILL_REASONS (`unknown` when absent or not one of them). */
  killReason?: KillReason;
  /** Killed events: how long the execution ran, seconds, when the event carries it. */
  executionSeconds?: number;
  /**
   * Killed and paused events, where E2B's execution-metrics flag is on: the running span that
   * ended (eventData.execution). Absent: the list's times stand in.
   */
  execution?: ExecutionSpan;
  /** eventData.sandbox_metadata: the sandbox's metadata as the event was written. */
  metadata?: Readonly<Record<string, string>>;
}

/** E2B's `execution` object: one running span of a sandbox, as the orchestrator measured it. */
export interface ExecutionSpan {
  /** `started_at`, epoch ms (E2B writes whole seconds, RFC 3339). */
  startedAt: number;
  vcpuCount: number;
  memoryMB: number;
  /** `execution_time`: ms from the span's start to the event. */
  durationMs: number;
}

/** Where events from either way go; the one place they are de-duplicated and counted. */
export interface LifecycleEventSink {
  /** Counts the event unless its id was seen already; true when it was new. */
  accept(event: LifecycleEvent, via: "poll" | "webhook"): boolean;
  /**
   * An event of another shard's sandbox, read here and counted by its own shard: only what it says
   * of the whole team (its id) is kept.
   */
  otherShard?(event: LifecycleEvent): void;
  /**
   * Whether the event is one this sink counts (several teams: a team the exporter watches);
   * absent: every one. One it does not is shown to `otherShard` like another shard's.
   */
  owns?(event: LifecycleEvent): boolean;
}
