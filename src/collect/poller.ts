// The poll scheduler: each tick refreshes the tick collectors (each single flight, with its own
// deadline) and starts a sandbox walk (single flight, backing off after failures); it publishes what
// ended within half an interval, and what ends later publishes its own immutable snapshot.

import { setTimeout as sleep } from "node:timers/promises";
import type { LifecycleEventSink } from "../platform/events.js";
import type { Clock } from "../util/clock.js";
import { timerMs } from "../util/duration.js";
import { Capabilities } from "./capabilities.js";
import {
  type Outcome,
  optedIn,
  type PlatformReader,
  type PollSettings,
  type TickCollector,
  type TickContext,
} from "./collector.js";
import { collectorStatus } from "./collector-status.js";
import type { SandboxList } from "./sandbox-table.js";
import { SandboxWalk, type SandboxWalkOptions } from "./sandbox-walk.js";
import type { CollectorName, CollectorStatus, Snapshot, TickData, TickName } from "./snapshot.js";
import { TickReads } from "./tick-reads.js";
import { UsageCollector } from "./usage-collector.js";
import { WalkRuns } from "./walk-runs.js";

export type { PlatformReader } from "./collector.js";
export { smallerPageLimit } from "./sandbox-walk.js";

/**
 * How long a tick waits for its collectors' reads and its walk (one wait for all) before publishing
 * what ended, in intervals: a tick lasts about half an interval plus its publish at most.
 */
const PUBLISH_WAIT_INTERVALS = 0.5;
/** How long one tick collector's read may take before it fails, in intervals. */
const READ_DEADLINE_INTERVALS = 1;

/** What to poll and how. */
export interface PollerOptions extends Omit<SandboxWalkOptions, "reader" | "clock" | "poll"> {
  reader: PlatformReader;
  clock: Clock;
  /**
   * The poll settings, the only place the poller and its collectors read them: the walk's, the
   * backoff ceiling, the capability re-check, usage, the opt-in collectors and their own fields.
   */
  poll: PollSettings;
  /** The kind of platform (platform.flavor); undefined: learned from its answers. */
  flavor?: TickContext["flavor"];
  /** Whether cluster-wide collectors run (only shard 0 exports them). */
  clusterWide: boolean;
  /** Whether it walks the sandbox list (default true; the cluster's, of several teams, does not). */
  walk?: boolean;
  /** Read /health even when not cluster-wide (the policy engine acts only while it is up). */
  readHealth?: boolean;
  /** Time between two ticks; data older than two of them is stale, whatever the reason. */
  intervalMs: number;
  /**
   * The states whose sandboxes usage asks about (states.running): with poll.usage, this shard's
   * running sandboxes are read after a complete walk, at most once per poll.usageIntervalMs.
   */
  runningStates: readonly string[];
  /**
   * Receives every snapshot (after each tick, and when a walk, a tick collector's read or a usage
   * read that outlived its tick ends, or a read reaches its deadline).
   */
  onSnapshot?: (snapshot: Snapshot) => Promise<void> | void;
  /** A snapshot handler failed after a read that outlived its tick (a tick's own failure rejects). */
  onError?: (err: unknown) => void;
  /** A collector was found unsupported (with the answer that said so), or supported again. */
  onSupport?: (
    collector: CollectorName,
    supported: boolean,
    error?: { code: string; message: string },
  ) => void;
  /** Where the events collector (poll.events) passes each event read: the ledger. */
  eventSink?: LifecycleEventSink;
  /** The team whose capacity teamMetrics reads: platform.teamId, else learned from events. */
  teamId?: () => string | undefined;
  /** The tick collectors to run: the catalog's (src/catalog.ts), or a test's own. */
  collectors: readonly TickCollector[];
}

/**
 * Turns the platform into a sequence of immutable snapshots. Each tick refreshes the tick
 * collectors that are not still reading and starts a sandbox walk unless one is still running or
 * failed walks are backing off; a slow or hung collector or walk therefore never holds back the
 * others.
 */
export class Poller {
  private last: Snapshot | undefined;
  private cycle = 0;
  /** Snapshots that carried a walk's outcome (poll_cycles_total). */
  private pollCycles = 0;
  private readonly reads: TickReads;
  private readonly tickCollectors: readonly TickCollector[];
  private readonly optIn: ReadonlySet<string>;
  private readonly capabilities: Capabilities;
  private readonly walk: SandboxWalk;
  private readonly usage: UsageCollector | undefined;
  private readonly walks: WalkRuns;
  private ticking = false;

  constructor(private readonly options: PollerOptions) {
    const { clock, reader, intervalMs } = options;
    this.tickCollectors = options.collectors;
    this.optIn = optedIn(this.tickCollectors, options.poll);
    this.capabilities = new Capabilities({
      clock,
      recheckMs: options.poll.capabilityRecheckMs,
      ...(options.onSupport ? { onSupport: options.onSupport } : {}),
    });
    this.walk = new SandboxWalk(options);
    const { maxBackoffMs, usageIntervalMs } = options.poll;
    // Usage follows a walk: a poller that walks nothing (the cluster's, of several teams) has none.
    const usage = options.poll.usage && options.walk !== false;
    this.walks = new WalkRuns({
      walk: this.walk,
      clock,
      intervalMs,
      maxBackoffMs,
      onEnd: async (outcome) => {
        if (outcome.ok) {
          this.capabilities.answered("sandboxes");
          this.usage?.start(outcome.value as SandboxList);
        }
        // A walk that ends while a tick is running is carried by that tick's snapshot.
        if (!this.ticking) await this.publish();
      },
      ...(options.onError ? { onError: options.onError } : {}),
    });
    this.reads = new TickReads({
      ctx: options,
      clock,
      capabilities: this.capabilities,
      deadlineMs: intervalMs * READ_DEADLINE_INTERVALS,
      // A read that ends while a tick is running is carried by that tick's snapshot.
      onOutcome: async () => {
        if (!this.ticking) await this.publish();
      },
      ...(options.onError ? { onError: options.onError } : {}),
    });
    this.usage = usage
      ? new UsageCollector({
          usage: { intervalMs: usageIntervalMs, runningStates: options.runningStates },
          reader,
          clock,
          intervalMs,
          capabilities: this.capabilities,
          // A read that ends while a tick is running is carried by that tick's snapshot.
          onRead: async () => {
            if (!this.ticking) await this.publish();
          },
          ...(options.onError ? { onError: options.onError } : {}),
        })
      : undefined;
  }

  /** The latest completed snapshot, if any cycle has finished. */
  get latest(): Snapshot | undefined {
    return this.last;
  }

  /** Epoch ms before which no walk starts (failed walks back off); 0 when not backing off. */
  get walkBackoffUntil(): number {
    return this.walks.backoffUntil;
  }

  /**
   * One scheduled tick: starts a walk when none is running and none is backing off, starts a read
   * of each tick collector not still reading, and publishes a snapshot of what ended in time (half
   * an interval, for the reads and the walk together). Whatever ends later (or
   * reaches its deadline) publishes its own snapshot. Returns whether a walk was already in flight.
   */
  async tick(): Promise<{ walkBusy: boolean }> {
    const { clock, intervalMs } = this.options;
    const walkBusy = this.walks.inFlight !== undefined;
    this.ticking = true;
    try {
      if (this.options.walk !== false && !walkBusy && clock.now() >= this.walkBackoffUntil)
        this.walks.start(this.last?.sandboxes);
      // Every collector at once, except that one naming another in `after` waits for its read of
      // this tick (until it ends or reaches its deadline).
      const started = new Map<TickName, Promise<void>>();
      const waiting = this.tickCollectors.filter((c) => c.after !== undefined);
      for (const c of [...this.tickCollectors.filter((c) => c.after === undefined), ...waiting]) {
        if (!this.runs(c) || (c.optional && this.capabilities.waiting(c.name))) continue;
        if (this.reads.busy(c.name)) continue;
        const before = c.after === undefined ? undefined : started.get(c.after);
        started.set(c.name, this.reads.start(c, before));
      }
      // One snapshot per tick when every read keeps up; what does not publishes on its own later.
      // One wait for reads and walk together: two in a row would stretch a tick past the
      // schedule's next trigger when both are slow, and that trigger would be skipped.
      await atMost(intervalMs * PUBLISH_WAIT_INTERVALS, [...started.values(), this.walks.inFlight]);
      await this.publish();
    } finally {
      this.ticking = false;
    }
    // What ended during the publish above left its outcome for the next snapshot: now.
    if (this.pending) await this.publish();
    return { walkBusy };
  }

  /**
   * Resolves when no walk, no tick collector's read and no usage read is in flight (their
   * snapshots published).
   */
  async walkDone(): Promise<void> {
    await this.walks.inFlight;
    await this.reads.idle();
    await this.usage?.inFlight;
  }

  /** An outcome waits for a snapshot. */
  private get pending(): boolean {
    return this.walks.pending || this.usage?.pending === true || this.reads.pending;
  }

  private runs(c: TickCollector): boolean {
    const { clusterWide, readHealth } = this.options;
    // An opt-in collector runs only while its setting is on: applied here, once for all of them.
    if (c.optIn !== undefined && !this.optIn.has(c.name)) return false;
    return c.runs({ clusterWide, readHealth: readHealth === true });
  }

  /** Makes the snapshot of what every collector last produced, and hands it on. */
  private async publish(): Promise<void> {
    const { clock, intervalMs } = this.options;
    const now = clock.now();
    const prev = this.last;
    const walked = this.walks.take();
    const usage = this.usage;
    const usageRefreshed = usage?.pending === true;
    if (usage) usage.pending = false;
    const refreshed: CollectorName[] = this.reads.takeFresh();
    if (walked) refreshed.push("sandboxes");
    if (usageRefreshed) refreshed.push("usage");
    const collectors = {} as Record<CollectorName, CollectorStatus>;
    for (const name of [...this.tickCollectors.map((c) => c.name), "sandboxes", "usage"] as const) {
      const isUsage = name === "usage";
      collectors[name] = collectorStatus(name, this.outcomeOf(name), prev?.collectors[name], {
        unsupported: this.capabilities.isUnsupported(name),
        runs: isUsage ? usage !== undefined : this.collectorRuns(name),
        now,
        everyMs: isUsage && usage ? usage.everyMs : intervalMs,
      });
    }
    const sandboxes = this.walks.outcome;
    const data: Partial<TickData> = {};
    for (const c of this.tickCollectors) {
      const value = this.reads.value(c.name);
      if (value !== undefined) Object.assign(data, { [c.name]: value });
    }
    const snapshot: Snapshot = {
      cycle: ++this.cycle,
      pollCycles: walked ? ++this.pollCycles : this.pollCycles,
      // The reads this snapshot brings, and only those: an outcome carried over (an unsupported
      // collector's, one still reading) says nothing about this cycle. Usage is left out: a read
      // that follows a walk says nothing about when the cycle began.
      startedAt: Math.min(
        now,
        ...refreshed.filter((n) => n !== "usage").map((n) => this.outcomeOf(n)?.startedAt ?? now),
      ),
      finishedAt: now,
      ...data,
      sandboxes: (sandboxes?.ok ? sandboxes.value : prev?.sandboxes) as SandboxList | undefined,
      sandboxesComplete: walked && sandboxes?.ok === true,
      ...(sandboxes?.ok && this.walk.totalRunning !== undefined
        ? { totalRunning: this.walk.totalRunning }
        : {}),
      walked,
      refreshed,
      collectors,
      ...(usage ? { usage: usage.data() } : {}),
    };
    this.last = snapshot;
    await this.options.onSnapshot?.(snapshot);
  }

  /** The latest outcome of collector `name`. */
  private outcomeOf(name: CollectorName): Outcome<unknown> | undefined {
    if (name === "usage") return this.usage?.outcome;
    return name === "sandboxes" ? this.walks.outcome : this.reads.outcome(name);
  }

  /** Whether this instance runs collector `name` (the walk unless `walk` is false). */
  private collectorRuns(name: CollectorName): boolean {
    const c = this.tickCollectors.find((t) => t.name === name);
    return c === undefined ? name === "sandboxes" && this.options.walk !== false : this.runs(c);
  }
}

/** Waits until every promise of `work` settled, or `ms` passed. */
async function atMost(ms: number, work: ReadonlyArray<Promise<void> | undefined>): Promise<void> {
  const stop = new AbortController();
  const timer = sleep(timerMs(ms), undefined, { signal: stop.signal, ref: false }).catch(
    () => undefined,
  );
  await Promise.race([Promise.all(work), timer]);
  stop.abort();
}
