// The idle signal: a sandbox's last activity, from its newest log entry, else a configured field,
// else its start time. Cached per sandbox: a read is only needed once the sandbox could be idle.
import type { PolicySpec } from "../config/policy-schema.js";
import type { LogEntry, Page, Sandbox } from "../platform/types.js";
import { mapLimit } from "../util/concurrency.js";
import { epochMs, parseTime } from "./match.js";

/** Where a last-activity time came from. */
export type ActivitySource = "log" | "metadata" | "runtime" | "start" | "none" | "error";

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

/** A read that never started (time budget spent): unknown, so never idle, and not cached. */
const UNREAD: Activity = { at: undefined, source: "none" };

interface CacheEntry extends Activity {
  startedAt: number | undefined;
}

/** Counts of one round of reads, for the metrics. */
export interface ActivityStats {
  reads: number;
  errors: number;
  cacheHits: number;
  /** Sandboxes left unread because the run's time budget was spent. */
  unread: number;
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
   * Last activity of each sandbox in `wanted` (id -> the shortest idleFor asked of it). A cached
   * value that is still younger than that idleFor is reused: newer log lines could only make it
   * younger. Entries of sandboxes not asked about are dropped.
   */
  async lastActivity(
    wanted: ReadonlyMap<Sandbox, number>,
    now: number,
    /** Past this (epoch ms, read from `clock`) no read starts: the rest stay unknown, so not idle. */
    budget: { until: number; clock: () => number } = { until: Infinity, clock: () => now },
  ): Promise<{ activity: Map<string, number | undefined>; stats: ActivityStats }> {
    const stats: ActivityStats = { reads: 0, errors: 0, cacheHits: 0, unread: 0 };
    const generation = this.generation;
    const next = new Map<string, CacheEntry>();
    const toRead: Sandbox[] = [];
    for (const [s, idleFor] of wanted) {
      const hit = this.cache.get(s.id);
      if (hit && hit.startedAt === s.startedAt && hit.at !== undefined && now - hit.at < idleFor) {
        stats.cacheHits++;
        next.set(s.id, hit);
      } else toRead.push(s);
    }
    const before = this.requests;
    const read = await mapLimit(toRead, this.options.concurrency, (s) =>
      budget.clock() < budget.until ? this.readOne(s) : Promise.resolve(UNREAD),
    );
    stats.reads = this.requests - before;
    toRead.forEach((s, i) => {
      const a = read[i] as Activity;
      if (a === UNREAD) stats.unread++;
      else if (a.source === "error") {
        stats.errors++;
        stats.firstError ??= a.error;
      } else next.set(s.id, { ...a, startedAt: s.startedAt });
    });
    if (generation === this.generation) this.cache = next;
    const activity = new Map<string, number | undefined>();
    for (const s of wanted.keys()) activity.set(s.id, next.get(s.id)?.at);
    return { activity, stats };
  }

  /** A fresh read for one sandbox (the executor's re-check before acting); never cached. */
  async readOne(s: Sandbox): Promise<Activity> {
    const running = this.running.has(s.state);
    if (running) {
      this.requests++;
      try {
        const page = await this.readLogs(s.id, {
          limit: 1,
          direction: this.options.logDirection,
        });
        const at = page.items[0]?.timestamp;
        if (at !== undefined) return { at, source: "log" };
      } catch (err) {
        return { at: undefined, source: "error", error: (err as Error).message ?? String(err) };
      }
    }
    return fallback(s, this.options, running);
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
