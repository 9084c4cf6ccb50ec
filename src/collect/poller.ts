// One poll cycle: every collector runs on its own; failures keep the last good data, marked stale.

import { setTimeout as sleep } from "node:timers/promises";
import { PlatformHttpError, PlatformNotFoundError } from "../platform/http-errors.js";
import type { DeferredPage } from "../platform/normalize/normalize.js";
import type {
  ClusterOverview,
  Health,
  PlatformNode,
  Sandbox,
  SandboxUsage,
  Template,
} from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { mapLimit } from "../util/concurrency.js";
import { timerMs } from "../util/duration.js";
import { inShard } from "../util/shard.js";
import { PagingError, walkPages } from "./paging.js";
import { type SandboxList, SandboxTable } from "./sandbox-table.js";
import { COLLECTORS, type CollectorName, type CollectorStatus } from "./snapshot.js";
import {
  type PolledSnapshot,
  readUsage,
  type UsageData,
  type UsageOptions,
  usageTargets,
} from "./usage-collector.js";

/** Detail reads (/nodes/{id}, /templates/{id}) in flight at once. */
const DETAIL_CONCURRENCY = 8;
/** Data not refreshed for this many intervals is stale. */
const STALE_INTERVALS = 2;
/** How long a tick waits for its walk before publishing the other collectors, in intervals. */
const WALK_WAIT_INTERVALS = 0.5;
/** Default bound on one walk, in intervals (poll.maxWalkMs). */
const MAX_WALK_INTERVALS = 4;

/** The read-only part of the control client that the poller needs. */
export interface PlatformReader {
  health(): Promise<Health>;
  clusterOverview(): Promise<ClusterOverview>;
  listNodes(): Promise<PlatformNode[]>;
  getNode(id: string): Promise<PlatformNode>;
  listTemplates(): Promise<Template[]>;
  getTemplate(id: string): Promise<Template>;
  listSandboxPage(
    q: { state?: string; metadata?: string; nextToken?: string; limit?: number },
    opts?: { slim?: boolean; keep?: (id: string) => boolean },
  ): Promise<DeferredPage<Sandbox>>;
  /** Latest usage sample of each of at most 100 sandboxes; ids without one are absent. */
  sandboxUsage(ids: readonly string[]): Promise<Map<string, SandboxUsage>>;
}

/** What to walk and how. */
export interface PollerOptions {
  reader: PlatformReader;
  clock: Clock;
  pageLimit: number;
  maxPages: number;
  state?: string;
  metadata?: string;
  nodeDetails: boolean;
  templateDetails: boolean;
  /** Whether cluster-wide collectors run (only shard 0 exports them). */
  clusterWide: boolean;
  /**
   * This instance's shard: the walk keeps only its sandboxes (another shard's record costs one id
   * read and is never kept), so nothing downstream filters again. Default: unsharded.
   */
  shard?: { index: number; total: number };
  /** Read /health even when not cluster-wide (the policy engine acts only while it is up). */
  readHealth?: boolean;
  /**
   * Keep sandboxes as a compact table without metadata (see SandboxTable): for when neither
   * per-sandbox series nor the policy engine read them.
   */
  compactSandboxes?: boolean;
  /** Time between two ticks; data older than two of them is stale, whatever the reason. */
  intervalMs: number;
  /** A walk whose count falls by more than this share of the last complete walk is walked again. */
  confirmDropRatio: number;
  /** Ceiling of the wait between failed walks (it doubles from one interval). */
  maxBackoffMs: number;
  /**
   * Longest one walk (drop confirmation included) may take: past it no page is asked for, and
   * the walk fails as incomplete (WalkTimeoutError). Default 4 intervals.
   */
  maxWalkMs?: number;
  /** A walk ran past maxWalkMs and was abandoned. */
  onWalkAbandoned?: () => void;
  /**
   * Read the usage of this shard's running sandboxes (GET /sandboxes/metrics) after a complete
   * walk, at most once per `usage.intervalMs`; off when absent.
   */
  usage?: UsageOptions;
  /**
   * Receives every snapshot (after each tick, and when a walk or a usage read that outlived its
   * tick ends).
   */
  onSnapshot?: (snapshot: PolledSnapshot) => Promise<void> | void;
  /** A snapshot handler failed after a walk that outlived its tick (a tick's own failure rejects). */
  onError?: (err: unknown) => void;
  /** Slow re-check of a collector found unsupported. */
  capabilityRecheckMs: number;
  /** A collector was found unsupported (with the answer that said so), or supported again. */
  onSupport?: (
    collector: CollectorName | "usage",
    supported: boolean,
    error?: { code: string; message: string },
  ) => void;
  /** The platform refused the page size: walks use `to` from now on. */
  onPageLimit?: (from: number, to: number) => void;
  /** A walk fell by more than confirmDropRatio; the second walk confirmed the drop or not. */
  onDrop?: (confirmed: boolean) => void;
}

interface Outcome<T> {
  value?: T;
  ok: boolean;
  requests: number;
  startedAt: number;
  durationMs: number;
  error?: { code: string; message: string };
  /** The endpoint answered 404, 405 or 403: the platform does not serve it (to us). */
  unsupportedAnswer?: boolean;
  /** The endpoint answered 401: unsupported for us when the key works elsewhere (see learnSupport). */
  refused?: boolean;
}

/** The small collectors: one request or a few each, refreshed every tick whatever the walk does. */
const SMALL = ["health", "overview", "nodes", "templates"] as const;
type SmallName = (typeof SMALL)[number];
/** Collectors whose endpoint may turn out not to be served (see learnSupport). */
type Optional = SmallName | "usage";

/**
 * Turns the platform into a sequence of immutable snapshots. Each tick refreshes the small
 * collectors and starts a sandbox walk unless one is still running or failed walks are backing
 * off; a slow or hung walk therefore never holds back health, overview, nodes and templates.
 */
export class Poller {
  private last: PolledSnapshot | undefined;
  private cycle = 0;
  /** The latest outcome of each collector and whether a snapshot carried it yet. */
  private readonly outcomes: Partial<Record<CollectorName, Outcome<unknown>>> = {};
  private walkInFlight: Promise<void> | undefined;
  /** A walk ended and no snapshot has carried its outcome yet. */
  private walkPending = false;
  private ticking = false;
  private walkFailures = 0;
  private nextWalkAt = 0;
  /** X-Total-Running of the last walk's first page, when the platform sends it. */
  private walkTotalRunning: number | undefined;
  /** The page size in use: poll.pageLimit until the platform refused it. */
  private pageLimit: number;
  /** Collectors found unsupported, and when each is read again. */
  private readonly unsupported = new Map<Optional, { recheckAt: number }>();
  /** Collectors that succeeded once: an error of theirs is a failure, never "unsupported". */
  private readonly supported = new Set<CollectorName | "usage">();
  private usageInFlight: Promise<void> | undefined;
  /** A usage read ended and no snapshot has carried its outcome yet. */
  private usagePending = false;
  private usageOutcome: Outcome<unknown> | undefined;
  /** When the last usage read started. */
  private usageStartedAt: number | undefined;
  /** The samples of the last usage read (a failed batch's ids keep the ones before). */
  private usageSamples: ReadonlyMap<string, SandboxUsage> = new Map();
  /** Ids the last usage read left out as too long for a request. */
  private usageSkipped = 0;
  /** Sandboxes of the last complete walk, for the drop check. */
  private lastCompleteCount: number | undefined;

  constructor(private readonly options: PollerOptions) {
    this.pageLimit = options.pageLimit;
  }

  /** The latest completed snapshot, if any cycle has finished. */
  get latest(): PolledSnapshot | undefined {
    return this.last;
  }

  /** Epoch ms before which no walk starts (failed walks back off); 0 when not backing off. */
  get walkBackoffUntil(): number {
    return this.walkFailures > 0 ? this.nextWalkAt : 0;
  }

  /**
   * One scheduled tick: starts a walk when none is running and none is backing off, refreshes the
   * small collectors, and publishes a snapshot. Resolves without waiting for the walk; a walk that
   * ends later publishes its own snapshot. Returns whether a walk was already in flight.
   */
  async tick(): Promise<{ walkBusy: boolean }> {
    const { clusterWide, readHealth, clock, intervalMs } = this.options;
    const walkBusy = this.walkInFlight !== undefined;
    const reads: Record<
      SmallName,
      (() => Promise<{ value: unknown; requests: number }>) | undefined
    > = {
      health: clusterWide || readHealth ? () => this.readHealth() : undefined,
      overview: clusterWide ? () => this.readOverview() : undefined,
      nodes: clusterWide ? () => this.readNodes() : undefined,
      templates: clusterWide ? () => this.readTemplates() : undefined,
    };
    // The collectors read this tick: an unsupported one waiting for its re-check is not.
    const ran: SmallName[] = [];
    this.ticking = true;
    try {
      if (!walkBusy && clock.now() >= this.walkBackoffUntil) this.startWalk();
      await Promise.all(
        SMALL.map(async (name) => {
          const read = reads[name];
          if (!read || this.stillUnsupported(name)) return;
          ran.push(name);
          const outcome = await this.attempt(read);
          this.outcomes[name] = outcome;
          this.learnSupport(name, outcome);
        }),
      );
      // One snapshot per tick when the walk keeps up; a slow walk publishes on its own later.
      await this.walkWithin(intervalMs * WALK_WAIT_INTERVALS);
      await this.publish(ran);
    } finally {
      this.ticking = false;
    }
    // A walk or usage read that ended during the publish above left its outcome for the next
    // snapshot: now.
    if (this.walkPending || this.usagePending) await this.publish([]);
    return { walkBusy };
  }

  /** Waits for the walk in flight, if any, at most `ms`. */
  private async walkWithin(ms: number): Promise<void> {
    const walk = this.walkInFlight;
    if (!walk) return;
    const stop = new AbortController();
    const timer = sleep(timerMs(ms), undefined, { signal: stop.signal, ref: false }).catch(
      () => undefined,
    );
    await Promise.race([walk, timer]);
    stop.abort();
  }

  /** Resolves when no walk, nor the usage read that follows one, is in flight (snapshots published). */
  async walkDone(): Promise<void> {
    await this.walkInFlight;
    await this.usageInFlight;
  }

  private startWalk(): void {
    const walk = async (): Promise<void> => {
      try {
        const outcome = await this.attempt(() => this.readSandboxes());
        this.outcomes.sandboxes = outcome;
        this.walkPending = true;
        if (outcome.ok) {
          this.walkFailures = 0;
          this.supported.add("sandboxes");
          this.startUsage(outcome.value as SandboxList);
        } else {
          this.walkFailures++;
          // The next tick after a first failure, then doubling intervals up to the ceiling.
          const { intervalMs, maxBackoffMs } = this.options;
          const wait = Math.min(
            maxBackoffMs,
            intervalMs * 2 ** Math.min(this.walkFailures - 1, 30),
          );
          this.nextWalkAt = outcome.startedAt + wait - intervalMs / 2;
        }
        // A walk that ends while a tick is running is carried by that tick's snapshot.
        if (!this.ticking) await this.publish([]);
      } catch (err) {
        this.options.onError?.(err);
      } finally {
        this.walkInFlight = undefined;
      }
    };
    this.walkInFlight = walk();
  }

  /**
   * Starts a usage read of `list` (a complete walk's) when the collector is on, no read is running,
   * its interval has passed and no capability re-check is awaited. Neither walks nor ticks wait
   * for it, and it starts no request once a poll interval has passed.
   */
  private startUsage(list: SandboxList): void {
    const u = this.options.usage;
    if (!u || this.usageInFlight || this.stillUnsupported("usage")) return;
    const { clock, intervalMs, reader } = this.options;
    const startedAt = clock.now();
    // Half a poll interval of slack, or a read due just after a walk ends waits a whole interval.
    const last = this.usageStartedAt;
    if (last !== undefined && startedAt - last < u.intervalMs - intervalMs / 2) return;
    this.usageStartedAt = startedAt;
    const run = async (): Promise<void> => {
      try {
        const ids = usageTargets(list, u);
        const read = (batch: readonly string[]) => reader.sandboxUsage(batch);
        const r = await readUsage(read, ids, this.usageSamples, clock, intervalMs);
        this.usageSamples = r.samples;
        this.usageSkipped = r.tooLong;
        const durationMs = clock.now() - startedAt;
        this.usageOutcome =
          r.error === undefined
            ? { ok: true, requests: r.requests, startedAt, durationMs }
            : { ...failure(r.error, startedAt, durationMs), requests: r.requests };
        if (r.answered) this.supported.add("usage");
        // A read that asked nothing (no running sandboxes) says nothing about the endpoint.
        if (r.requests > 0) this.learnSupport("usage", this.usageOutcome);
        this.usagePending = true;
        if (!this.ticking) await this.publish([]);
      } catch (err) {
        this.options.onError?.(err);
      } finally {
        this.usageInFlight = undefined;
      }
    };
    this.usageInFlight = run();
  }

  /** The usage collector's part of a snapshot made at `now`. */
  private usageData(now: number, prev: UsageData | undefined, refreshed: boolean): UsageData {
    const u = this.options.usage as UsageOptions;
    // A read follows a walk: at most one per poll interval, however short usage.intervalMs is.
    const every = Math.max(u.intervalMs, this.options.intervalMs);
    const status = this.status("usage", this.usageOutcome, prev?.status, now, every);
    return { samples: this.usageSamples, status, refreshed, skippedIds: this.usageSkipped };
  }

  /** Makes the snapshot of what every collector last produced, and hands it on. */
  private async publish(refreshedSmall: readonly SmallName[]): Promise<void> {
    const { clock, intervalMs } = this.options;
    const now = clock.now();
    const prev = this.last;
    const walked = this.walkPending;
    this.walkPending = false;
    const usageRefreshed = this.usagePending;
    this.usagePending = false;
    const refreshed: CollectorName[] = [...refreshedSmall];
    if (walked) refreshed.push("sandboxes");
    const collectors = {} as Record<CollectorName, CollectorStatus>;
    for (const name of COLLECTORS)
      collectors[name] = this.status(
        name,
        this.outcomes[name],
        prev?.collectors[name],
        now,
        intervalMs,
      );
    const o = this.outcomes;
    const sandboxes = o.sandboxes;
    const snapshot: PolledSnapshot = {
      cycle: ++this.cycle,
      startedAt: Math.min(now, ...COLLECTORS.map((n) => o[n]?.startedAt ?? now)),
      finishedAt: now,
      health: (o.health?.ok ? o.health.value : prev?.health) as Health | undefined,
      overview: (o.overview?.ok ? o.overview.value : prev?.overview) as ClusterOverview | undefined,
      nodes: (o.nodes?.ok ? o.nodes.value : prev?.nodes) as PlatformNode[] | undefined,
      templates: (o.templates?.ok ? o.templates.value : prev?.templates) as Template[] | undefined,
      sandboxes: (sandboxes?.ok ? sandboxes.value : prev?.sandboxes) as SandboxList | undefined,
      sandboxesComplete: walked && sandboxes?.ok === true,
      ...(sandboxes?.ok && this.walkTotalRunning !== undefined
        ? { totalRunning: this.walkTotalRunning }
        : {}),
      walked,
      refreshed,
      collectors,
      ...(this.options.usage ? { usage: this.usageData(now, prev?.usage, usageRefreshed) } : {}),
    };
    this.last = snapshot;
    await this.options.onSnapshot?.(snapshot);
  }

  /** An unsupported collector is left alone until its re-check is due. */
  private stillUnsupported(name: Optional): boolean {
    const u = this.unsupported.get(name);
    return u !== undefined && this.options.clock.now() < u.recheckAt;
  }

  /**
   * A collector whose endpoint answers 404, 405 or 403 before it ever succeeded is unsupported
   * by this platform (E2B has no /cluster/overview; /nodes is for admins): it is re-checked at
   * a slow interval instead of failing every tick. A success makes it supported again.
   */
  private learnSupport(name: Optional, outcome: Outcome<unknown>): void {
    const was = this.unsupported.has(name);
    if (outcome.ok) {
      this.supported.add(name);
      if (was) {
        this.unsupported.delete(name);
        this.options.onSupport?.(name, true);
      }
      return;
    }
    // E2B answers 401 on /nodes without an admin token: with a key the sandbox walk accepts, that
    // is the endpoint refusing us, not a bad key (which fails the walk too, and alerts there).
    const refusedToUs = outcome.refused === true && this.supported.has("sandboxes");
    if (!(outcome.unsupportedAnswer || refusedToUs) || this.supported.has(name)) return;
    const recheckAt = this.options.clock.now() + this.options.capabilityRecheckMs;
    this.unsupported.set(name, { recheckAt });
    if (!was) this.options.onSupport?.(name, false, outcome.error);
  }

  /** A collector's status at `now`; its data is stale once older than two of `everyMs`. */
  private status<N extends CollectorName | "usage">(
    name: N,
    outcome: Outcome<unknown> | undefined,
    prev: StatusOf<N> | undefined,
    now: number,
    everyMs: number,
  ): StatusOf<N> {
    if (this.unsupported.has(name as Optional))
      return {
        name,
        success: false,
        stale: false,
        unsupported: true,
        lastAttemptAt: outcome?.startedAt ?? now,
        durationMs: outcome?.durationMs ?? 0,
        requests: outcome?.requests ?? 0,
        ...(outcome?.error ? { error: outcome.error } : {}),
      };
    const runs =
      name === "sandboxes" ||
      name === "usage" ||
      this.options.clusterWide ||
      (name === "health" && this.options.readHealth);
    if (!runs) {
      return {
        name,
        success: false,
        stale: false,
        skipped: true,
        lastAttemptAt: now,
        durationMs: 0,
        requests: 0,
      };
    }
    if (!outcome) {
      // Not answered yet (the first walk is still running): nothing held, so stale.
      return (
        prev ?? {
          name,
          success: false,
          stale: true,
          lastAttemptAt: now,
          durationMs: 0,
          requests: 0,
        }
      );
    }
    const lastSuccessAt = outcome.ok ? outcome.startedAt : prev?.lastSuccessAt;
    // Old data is stale whatever kept it from being refreshed: a failure, a hang, a backoff.
    const staleAfter =
      lastSuccessAt === undefined ? undefined : lastSuccessAt + STALE_INTERVALS * everyMs;
    const tooOld = staleAfter === undefined || now > staleAfter;
    return {
      name,
      success: outcome.ok,
      stale: !outcome.ok || tooOld,
      lastAttemptAt: outcome.startedAt,
      ...(lastSuccessAt !== undefined ? { lastSuccessAt } : {}),
      ...(staleAfter !== undefined ? { staleAfter } : {}),
      durationMs: outcome.durationMs,
      requests: outcome.requests,
      ...(outcome.error ? { error: outcome.error } : {}),
    };
  }

  private async attempt<T>(
    read: () => Promise<{ value: T; requests: number }>,
  ): Promise<Outcome<T>> {
    const startedAt = this.options.clock.now();
    try {
      const { value, requests } = await read();
      return {
        value,
        ok: true,
        requests,
        startedAt,
        durationMs: this.options.clock.now() - startedAt,
      };
    } catch (err) {
      return failure(err, startedAt, this.options.clock.now() - startedAt);
    }
  }

  private async readHealth(): Promise<{ value: Health; requests: number }> {
    return { value: await this.options.reader.health(), requests: 1 };
  }

  private async readOverview(): Promise<{ value: ClusterOverview; requests: number }> {
    return { value: await this.options.reader.clusterOverview(), requests: 1 };
  }

  private readNodes(): Promise<{ value: PlatformNode[]; requests: number }> {
    const { reader, nodeDetails } = this.options;
    return withDetails(
      () => reader.listNodes(),
      (id) => reader.getNode(id),
      nodeDetails,
    );
  }

  private readTemplates(): Promise<{ value: Template[]; requests: number }> {
    const { reader, templateDetails } = this.options;
    return withDetails(
      () => reader.listTemplates(),
      (id) => reader.getTemplate(id),
      templateDetails,
    );
  }

  /**
   * A walk of every page. A count that fell by more than confirmDropRatio from the last complete
   * walk is walked once more before it is believed: a flapping proxy or a paging bug upstream
   * must not read as half the fleet gone (churn counters, policy). A real drop is seen twice.
   */
  private async readSandboxes(): Promise<{ value: SandboxList; requests: number }> {
    const { clock, intervalMs, maxWalkMs } = this.options;
    const limitMs = maxWalkMs ?? MAX_WALK_INTERVALS * intervalMs;
    const deadline = { at: clock.now() + limitMs, limitMs };
    try {
      return await this.walkChecked(deadline);
    } catch (err) {
      if (err instanceof PagingError && err.code === "ERR_PAGING_WALK_TIMEOUT")
        this.options.onWalkAbandoned?.();
      throw err;
    }
  }

  private async walkChecked(deadline: Deadline): Promise<{ value: SandboxList; requests: number }> {
    const first = await this.walkOnce(deadline);
    const before = this.lastCompleteCount;
    const dropped = (n: number): boolean =>
      before !== undefined && before - n > before * this.options.confirmDropRatio;
    let walk = first;
    if (dropped(first.value.length)) {
      let second: { value: SandboxList; requests: number };
      try {
        second = await this.walkOnce(deadline);
      } catch (err) {
        this.options.onDrop?.(false);
        throw err;
      }
      this.options.onDrop?.(dropped(second.value.length));
      walk = { value: second.value, requests: first.requests + second.requests };
    }
    this.lastCompleteCount = walk.value.length;
    return walk;
  }

  /**
   * A walk; when the platform refuses the page size of its first page with a 400 (E2B caps it at
   * 100), the size is lowered once to what the answer names (else 100, else half), remembered,
   * and the walk made again.
   */
  private async walkOnce(deadline: Deadline): Promise<{ value: SandboxList; requests: number }> {
    try {
      return await this.walkWith(this.pageLimit, deadline);
    } catch (err) {
      const lower = smallerPageLimit(err, this.pageLimit);
      if (lower === undefined) throw err;
      this.options.onPageLimit?.(this.pageLimit, lower);
      this.pageLimit = lower;
      return this.walkWith(lower, deadline);
    }
  }

  private async walkWith(
    pageLimit: number,
    deadline: Deadline,
  ): Promise<{ value: SandboxList; requests: number }> {
    const { reader, maxPages, state, metadata, clock, shard } = this.options;
    const slim = this.options.compactSandboxes === true;
    const sharded = shard !== undefined && shard.total > 1;
    const opts = sharded
      ? { slim, keep: (id: string) => inShard(id, shard.index, shard.total) }
      : { slim };
    let totalRunning: number | undefined;
    let pages = 0;
    const fetchPage = async (nextToken: string | undefined) => {
      // Checked before each page: an endless chain or a crawl ends as an incomplete walk.
      if (clock.now() > deadline.at)
        throw new PagingError(
          "ERR_PAGING_WALK_TIMEOUT",
          `walk abandoned after ${pages} pages: it ran past ${deadline.limitMs} ms (poll.maxWalkMs)`,
          pages,
        );
      pages++;
      const page = await reader.listSandboxPage(
        {
          limit: pageLimit,
          ...(state ? { state } : {}),
          ...(metadata ? { metadata } : {}),
          ...(nextToken !== undefined ? { nextToken } : {}),
        },
        opts,
      );
      // The first page's count: the one taken closest to the walk's start.
      if (nextToken === undefined) totalRunning = page.totalRunning;
      return page;
    };
    let out: { value: SandboxList; requests: number };
    if (slim) {
      // Fleets change little between two cycles: sized for, and sharing ids with, the last walk.
      const table = SandboxTable.builder(this.last?.sandboxes);
      const walk = await walkPages(fetchPage, maxPages, (s) => table.push(s));
      out = { value: table.build(), requests: walk.pages };
    } else {
      // Repeated ids are looked for page by page: one Map of the whole walk at its end blocked
      // the event loop for tens of ms at 100,000 sandboxes, about a second at 1,000,000.
      const items: Sandbox[] = [];
      const ids = new Set<string>();
      let repeated = false;
      const walk = await walkPages(fetchPage, maxPages, (s) => {
        if (ids.has(s.id)) repeated = true;
        else ids.add(s.id);
        items.push(s);
      });
      out = { value: repeated ? dedupeById(items) : items, requests: walk.pages };
    }
    this.walkTotalRunning = totalRunning;
    return out;
  }
}

/** When the walk in progress must give up (monotonic with the clock's now), and its bound. */
interface Deadline {
  at: number;
  limitMs: number;
}

/** A collector's status, named `N`. */
type StatusOf<N extends string> = Omit<CollectorStatus, "name"> & { name: N };

/** The outcome of a read that failed with `err`. */
function failure(err: unknown, startedAt: number, durationMs: number): Outcome<never> {
  return {
    ok: false,
    requests: 0,
    startedAt,
    durationMs,
    error: describeError(err),
    unsupportedAnswer:
      err instanceof PlatformNotFoundError ||
      (err instanceof PlatformHttpError && (err.status === 403 || err.status === 405)),
    refused: err instanceof PlatformHttpError && err.status === 401,
  };
}

/** Reads a list and, when asked, each item's detail record merged over its summary. */
async function withDetails<T extends Detailed>(
  list: () => Promise<T[]>,
  detail: (id: string) => Promise<T>,
  enabled: boolean,
): Promise<{ value: T[]; requests: number }> {
  const items = await list();
  if (!enabled) return { value: items, requests: 1 };
  const value = await mapLimit(items, DETAIL_CONCURRENCY, async (item) =>
    mergeDetail(item, await detail(item.id)),
  );
  return { value, requests: 1 + items.length };
}

type Detailed = { id: string; numeric: Record<string, number>; info: Record<string, string> };

/** Detail records win over list summaries, field by field. */
function mergeDetail<T extends Detailed>(summary: T, detail: T): T {
  return {
    ...summary,
    ...detail,
    numeric: { ...summary.numeric, ...detail.numeric },
    info: { ...summary.info, ...detail.info },
  };
}

/** A sandbox listed twice (it moved while we paged) is kept once, at its latest position. */
function dedupeById(items: Sandbox[]): Sandbox[] {
  const byId = new Map<string, Sandbox>();
  for (const s of items) byId.set(s.id, s);
  return byId.size === items.length ? items : [...byId.values()];
}

/** Stable code and a one-line message of any error, for /status and metrics. */
export function describeError(err: unknown): { code: string; message: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      code: typeof code === "string" ? code : "ERR_UNKNOWN",
      message: err.message.split("\n")[0] ?? "",
    };
  }
  return { code: "ERR_UNKNOWN", message: String(err) };
}

/** A limit the platform named in a 400 ("limit must be <= 100", "maximum 100", "at most 100"). */
const NAMED_LIMIT =
  /(?:<=|at most|maximum(?: of| is)?|max(?:imum)?:?|up to|less than or equal to)\s*(\d{1,6})/i;

/**
 * The smaller page size to try when `err` is the platform refusing the first page's size (a 400
 * of GET /v2/sandboxes); undefined for any other failure or when no smaller size is left.
 */
export function smallerPageLimit(err: unknown, current: number): number | undefined {
  if (!(err instanceof PlatformHttpError) || err.status !== 400) return undefined;
  // Only an answer about the page size: another 400 (a bad token) must not shrink every walk.
  if (err.endpoint !== "/v2/sandboxes" || !/limit/i.test(err.bodyExcerpt)) return undefined;
  const named = NAMED_LIMIT.exec(err.bodyExcerpt);
  const to = named ? Number(named[1]) : current > 100 ? 100 : Math.floor(current / 2);
  return to >= 1 && to < current ? to : undefined;
}
