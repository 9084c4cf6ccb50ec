// The sandbox collector: a walk of every page of /v2/sandboxes, with its quirks: the shard applied
// at the list, a drop confirmed by a second walk, a page size the platform refuses lowered once, and
// a time bound on the whole walk.
import { PlatformHttpError } from "../platform/http-errors.js";
import type { Sandbox } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { inShard } from "../util/shard.js";
import type { PlatformReader, PollSettings, Reading } from "./collector.js";
import { PagingError, walkPages } from "./paging.js";
import { type SandboxList, SandboxTable } from "./sandbox-table.js";

/** Default bound on one walk, in poll intervals (poll.maxWalkMs). */
const MAX_WALK_INTERVALS = 4;

/** The poll settings the walk reads: its page size and ceiling, its filters, its bounds. */
export type WalkSettings = Pick<
  PollSettings,
  "pageLimit" | "maxPages" | "state" | "metadata" | "confirmDropRatio" | "maxWalkMs"
>;

/** What to walk and how. */
export interface SandboxWalkOptions {
  reader: PlatformReader;
  clock: Clock;
  /** The poll settings (poll.maxWalkMs unset: MAX_WALK_INTERVALS intervals). */
  poll: WalkSettings;
  /**
   * Keep sandboxes as a compact table without metadata (see SandboxTable): for when neither
   * per-sandbox series nor the policy engine read them.
   */
  compactSandboxes?: boolean;
  /**
   * This instance's shard: the walk keeps only its sandboxes (another shard's record costs one id
   * read and is never kept), so nothing downstream filters again. Default: unsharded.
   */
  shard?: { index: number; total: number };
  /** Time between two poll ticks (the default walk bound is four of them). */
  intervalMs: number;
  /**
   * A walk ran past its bound and was abandoned (ERR_PAGING_WALK_TIMEOUT): no page is asked for
   * past it. `limitMs`: the bound, poll.maxWalkMs or its default, drop confirmation included.
   */
  onWalkAbandoned?: (limitMs: number) => void;
  /** The platform refused the page size: walks use `to` from now on. */
  onPageLimit?: (from: number, to: number) => void;
  /** A walk fell by more than confirmDropRatio; the second walk confirmed the drop or not. */
  onDrop?: (confirmed: boolean) => void;
}

/** When the walk in progress must give up (monotonic with the clock's now), and its bound. */
interface Deadline {
  at: number;
  limitMs: number;
}

/** Walks the sandbox list; remembers what the next walk needs (page size, last count). */
export class SandboxWalk {
  /** The page size in use: poll.pageLimit until the platform refused it. */
  private pageLimit: number;
  /** Sandboxes of the last complete walk, for the drop check. */
  private lastCompleteCount: number | undefined;
  /** During a walk, the last walk's list: a compact table is sized for it and shares its ids. */
  private previous: SandboxList | undefined;
  /** X-Total-Running of the last walk's first page, when the platform sends it. */
  totalRunning: number | undefined;

  constructor(private readonly o: SandboxWalkOptions) {
    this.pageLimit = o.poll.pageLimit;
  }

  /**
   * A walk of every page. A count that fell by more than confirmDropRatio from the last complete
   * walk is walked once more before it is believed: a flapping proxy or a paging bug upstream
   * must not read as half the fleet gone (churn counters, policy). A real drop is seen twice.
   */
  async read(previous: SandboxList | undefined): Promise<Reading<SandboxList>> {
    const { clock, intervalMs, poll } = this.o;
    const limitMs = poll.maxWalkMs ?? MAX_WALK_INTERVALS * intervalMs;
    this.previous = previous;
    const deadline = { at: clock.now() + limitMs, limitMs };
    try {
      return await this.walkChecked(deadline);
    } catch (err) {
      if (err instanceof PagingError && err.code === "ERR_PAGING_WALK_TIMEOUT")
        this.o.onWalkAbandoned?.(limitMs);
      throw err;
    } finally {
      // Held only while walking: kept after it, a million-row list would outlive its snapshot.
      this.previous = undefined;
    }
  }

  private async walkChecked(deadline: Deadline): Promise<Reading<SandboxList>> {
    const first = await this.walkOnce(deadline);
    const before = this.lastCompleteCount;
    const dropped = (n: number): boolean =>
      before !== undefined && before - n > before * this.o.poll.confirmDropRatio;
    let walk = first;
    if (dropped(first.value.length)) {
      let second: Reading<SandboxList>;
      try {
        second = await this.walkOnce(deadline);
      } catch (err) {
        this.o.onDrop?.(false);
        throw err;
      }
      this.o.onDrop?.(dropped(second.value.length));
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
  private async walkOnce(deadline: Deadline): Promise<Reading<SandboxList>> {
    try {
      return await this.walkWith(this.pageLimit, deadline);
    } catch (err) {
      const lower = smallerPageLimit(err, this.pageLimit);
      if (lower === undefined) throw err;
      this.o.onPageLimit?.(this.pageLimit, lower);
      this.pageLimit = lower;
      return this.walkWith(lower, deadline);
    }
  }

  private async walkWith(pageLimit: number, deadline: Deadline): Promise<Reading<SandboxList>> {
    const { reader, clock, shard } = this.o;
    const { maxPages, state, metadata } = this.o.poll;
    const slim = this.o.compactSandboxes === true;
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
    let out: Reading<SandboxList>;
    if (slim) {
      // Fleets change little between two cycles: sized for, and sharing ids with, the last walk.
      const table = SandboxTable.builder(this.previous);
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
    this.totalRunning = totalRunning;
    return out;
  }
}

/** A sandbox listed twice (it moved while we paged) is kept once: its latest record, where it was first listed. */
function dedupeById(items: Sandbox[]): Sandbox[] {
  const byId = new Map<string, Sandbox>();
  for (const s of items) byId.set(s.id, s);
  return byId.size === items.length ? items : [...byId.values()];
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
