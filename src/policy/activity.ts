// The idle signal: a sandbox's last activity, from its newest log entry, else a configured field,
// else its start time. Cached per sandbox: a read is only needed once the sandbox could be idle.

import { PlatformNotFoundError } from "../platform/http-errors.js";
import type { LogEntry, Page, Sandbox } from "../platform/types.js";
import { mapLimit } from "../util/concurrency.js";
import { epochMs, parseTime } from "./match.js";
import type { PolicySpec } from "./policy-settings.js";

/**
 * Where a last-activity time came from; `gone`: the log read found no such sandbox (404), as
 * when it was killed between the walk and the read.
 */
export type ActivitySource = "log" | "metadata" | "runtime" | "start" | "none" | "error" | "gone";

/** A sandbox's last activity as far as the platform tells. */
export interface Activity {
  /** Epoch ms; undefined when unknown (then no rule ever finds the sandbox idle). */
  at: number | undefined;
  source: ActivitySource;
  /** The log read's error, when it failed. */
  error?: string;
}

/** The log read the idle signal needs (GET /v2/sandboxes/{id}/logs). */
export type LogReader = (
  id: string,
  q: { limit: number; direction: string },
) => Promise<Page<LogEntry>>;

interface CacheEntry extends Activity {
  startedAt: number | undefined;
}

/** Counts of one round of reads, for the metrics. */
export interface ActivityStats {
  reads: number;
  errors: number;
  /** Reads that found the sandbox gone (404): not failed, and the sandbox is no candidate. */
  gone: number;
  cacheHits: number;
  /** Sandboxes left unread because the run's time budget was spent. */
  unread: number;
  /** Sandboxes not read because enough were known idle, or maxReadsPerRun was reached. */
  deferred: number;
  firstError?: string;
}

/**
 * Reads and caches last activity. Only sandboxes in a running state are read (a read may wake a
 * paused one); for the others only the configured fields count, never the start time: a sandbox
 * started days ago and paused a minute ago is not idle for days.
 */
export class ActivityTracker {
  private cache = new Map<string, CacheEntry>();
  /** Log reads issued so far. */
  private requests = 0;

  constructor(
    private readonly readLogs: LogReader,
    private options: PolicySpec["activity"],
    private readonly running: ReadonlySet<string>,
  ) {}

  /** Bumped by setOptions, so a run that began under the old settings does not refill the cache. */
  private generation = 0;

  /** New settings (reload); cached values may have come from the old fallbacks, so they go. */
  setOptions(options: PolicySpec["activity"]): void {
    this.options = options;
    this.cache = new Map();
    this.generation++;
  }

  /**
   * Last activity of each sandbox in `wanted` (sandbox -> the shortest idleFor asked of it), read
   * only as far as it can lead to an action. A cached value is reused, active or idle: newer log
   * lines could only make it younger, and the executor reads a sandbox again before acting on it.
   * `sample` is read fresh whatever the cache holds (the blast-radius estimate must see the signal
   * as it is now). The others, never read yet, are read oldest first (by start time) until
   * `enough` sandboxes are known idle, `maxReadsPerRun` reads were made, or `budget.until` passed;
   * the rest stay unknown this run, and unknown is never idle. Entries not asked about are dropped.
   */
  async lastActivity(
    wanted: ReadonlyMap<Sandbox, number>,
    now: number,
    opts: {
      /** The run's settings (its rule set's), whatever a reload sets meanwhile; default the latest. */
      options?: PolicySpec["activity"];
      sample?: ReadonlySet<Sandbox>;
      /** Idle sandboxes worth knowing this run (the actions it may take). */
      enough?: number;
      /** Ids no action can reach this run (cooldown): known idle, they do not count as enough. */
      spent?: ReadonlySet<string>;
      /** Past `until` (epoch ms, read from `clock`) no read starts. */
      until?: number;
      clock?: () => number;
    } = {},
  ): Promise<{ activity: Map<string, Activity>; gone: Set<string>; stats: ActivityStats }> {
    const stats: ActivityStats = {
      reads: 0,
      errors: 0,
      gone: 0,
      cacheHits: 0,
      unread: 0,
      deferred: 0,
    };
    const gone = new Set<string>();
    const clock = opts.clock ?? (() => now);
    const until = opts.until ?? Number.POSITIVE_INFINITY;
    const enough = opts.enough ?? Number.POSITIVE_INFINITY;
    const sample = opts.sample ?? new Set<Sandbox>();
    const spent = opts.spent ?? new Set<string>();
    const options = opts.options ?? this.options;
    const generation = this.generation;
    const next = new Map<string, CacheEntry>();
    const unknown: Sandbox[] = [];
    let idle = 0;
    for (const [s, idleFor] of wanted) {
      const hit = this.cache.get(s.id);
      if (hit && hit.startedAt === s.startedAt && hit.at !== undefined && !sample.has(s)) {
        stats.cacheHits++;
        next.set(s.id, hit);
        if (now - hit.at >= idleFor && !spent.has(s.id)) idle++;
      } else if (!sample.has(s)) unknown.push(s);
    }
    // Oldest first: the likeliest to be idle, and the ones a limit should reach first.
    unknown.sort((a, b) => (a.startedAt ?? Infinity) - (b.startedAt ?? Infinity));
    const maxReads = options.maxReadsPerRun;
    const batch = options.concurrency;
    const queue = [...[...sample].filter((s) => wanted.has(s)), ...unknown];
    const sampled = queue.length - unknown.length;
    let at = 0;
    // Bounded by the queue: every pass takes at least one sandbox off it or stops.
    while (at < queue.length) {
      if (clock() >= until) {
        stats.unread += queue.length - at;
        break;
      }
      if (at >= sampled && (idle >= enough || stats.reads >= maxReads)) {
        stats.deferred += queue.length - at;
        break;
      }
      const room = at < sampled ? sampled - at : Math.min(batch, maxReads - stats.reads);
      const part = queue.slice(at, at + Math.max(1, Math.min(batch, room)));
      at += part.length;
      const before = this.requests;
      const read = await mapLimit(part, batch, (s) => this.readOne(s, options));
      stats.reads += this.requests - before;
      part.forEach((s, i) => {
        const a = read[i] as Activity;
        if (a.source === "error") {
          stats.errors++;
          stats.firstError ??= a.error;
          return;
        }
        if (a.source === "gone") {
          stats.gone++;
          gone.add(s.id);
          return;
        }
        next.set(s.id, { ...a, startedAt: s.startedAt });
        const idleFor = wanted.get(s) as number;
        if (a.at !== undefined && now - a.at >= idleFor && !spent.has(s.id)) idle++;
      });
    }
    if (generation === this.generation) this.cache = next;
    const activity = new Map<string, Activity>();
    for (const s of wanted.keys()) {
      const a = next.get(s.id);
      if (a) activity.set(s.id, a);
    }
    return { activity, gone, stats };
  }

  /** A fresh read before acting; what it finds replaces the cached value (not an error). */
  async recheck(s: Sandbox, options: PolicySpec["activity"] = this.options): Promise<Activity> {
    const a = await this.readOne(s, options);
    // Read under settings a reload has since replaced: not for the new settings' cache.
    if (a.source !== "error" && a.source !== "gone" && options === this.options)
      this.cache.set(s.id, { ...a, startedAt: s.startedAt });
    return a;
  }

  /** A fresh read for one sandbox (the executor's re-check before acting); never cached. */
  async readOne(s: Sandbox, options: PolicySpec["activity"] = this.options): Promise<Activity> {
    const running = this.running.has(s.state);
    if (running) {
      this.requests++;
      try {
        const page = await this.readLogs(s.id, {
          limit: 1,
          direction: options.logDirection,
        });
        const at = page.items[0]?.timestamp;
        if (at !== undefined) return { at, source: "log" };
      } catch (err) {
        if (err instanceof PlatformNotFoundError) return { at: undefined, source: "gone" };
        return { at: undefined, source: "error", error: (err as Error).message ?? String(err) };
      }
    }
    return fallback(s, options, running);
  }
}

/** Last activity when the logs give none: the metadata field, the runtime field, the start (running only). */
function fallback(s: Sandbox, o: PolicySpec["activity"], running: boolean): Activity {
  const meta = o.metadataField ? s.metadata[o.metadataField] : undefined;
  const fromMeta = meta === undefined ? undefined : parseTime(meta);
  if (fromMeta !== undefined) return { at: fromMeta, source: "metadata" };
  const runtime = o.runtimeField ? s.extra[o.runtimeField] : undefined;
  const fromRuntime = runtime === undefined ? undefined : epochMs(runtime);
  if (fromRuntime !== undefined) return { at: fromRuntime, source: "runtime" };
  if (running && s.startedAt !== undefined) return { at: s.startedAt, source: "start" };
  return { at: undefined, source: "none" };
}
