// One tick's read of the lifecycle events (see events.ts for the passes it makes): the settle
// pass, the fresh one, then what cut fresh passes left, each positioned by timestamps; ids read are
// remembered to be passed once.
import type { LifecycleEvent, LifecycleEventSink } from "../platform/events.js";
import type { TickContext } from "./collector.js";
import {
  EVENTS_PAGE_SIZE,
  EventPass,
  EventsReadError,
  type Page,
  PageReader,
} from "./event-pages.js";
import type { BehindPass, EventCursor, PendingPass, ReadEvent } from "./events.js";

/** How long after its timestamp an event may still be stored: the settle pass reads that far behind. */
export const EVENTS_SETTLE_MS = 60_000;
/**
 * How far ahead of our clock an event may be stamped and still be ordered: one stamped further (a
 * bad clock, a bad record) is counted, but takes no part in where a pass goes on.
 */
export const EVENTS_MAX_SKEW_MS = 5 * 60_000;

/** Ids remembered at most (the newest); one forgotten and read again is a duplicate to the ledger. */
const MAX_RECENT = 50_000;
/** Ids of events out of place remembered at most, so each is counted once. */
const MAX_MISPLACED = 1_000;
/** A settle target this near the top is read to from there, with the fresh pass, not looked for. */
const NEAR_TOP = 2 * EVENTS_PAGE_SIZE;
/** Cut fresh passes kept at most (a few numbers each). */
const MAX_BEHIND = 8;

/** One tick's read. */
export class EventsRead {
  private readonly pages: PageReader;
  private readonly now: number;
  /** Events stamped after this (the clock plus the skew allowed) are out of place: never ordered. */
  private readonly latest: number;
  private readonly known: Map<string, number>;
  private readonly misplacedIds: Set<string>;
  private misplaced: number;
  private read = 0;
  private accepted = 0;
  /** The newest event of the list (position 0): events per millisecond, for the passes' estimates. */
  private ref: { ts: number } | undefined;

  constructor(
    ctx: TickContext,
    private readonly sink: LifecycleEventSink,
    private readonly cur: EventCursor,
    /** Whether a sandbox is this shard's: only its events are passed to the sink. */
    private readonly own: (sandboxId: string) => boolean = () => true,
  ) {
    this.now = ctx.clock.now();
    this.latest = this.now + EVENTS_MAX_SKEW_MS;
    this.pages = new PageReader(ctx.reader, Math.max(1, ctx.poll.eventsMaxPages), this.latest);
    this.known = new Map(cur.recent);
    this.misplacedIds = new Set(cur.misplacedIds);
    this.misplaced = cur.misplaced;
  }

  async run() {
    const { cur, pages } = this;
    const first = await this.page(0);
    if (first === undefined) return { value: cur, requests: pages.requests };
    const newest = first.rows[0];
    this.ref = newest ? { ts: newest.e.timestamp } : undefined;
    const top = Math.max(cur.top, newest?.e.timestamp ?? Number.NEGATIVE_INFINITY);
    // Stamped before this, an event is stored by now: E2B's time is the newest event's, or our
    // clock less the margin once none came for that long (so a quiet list settles too).
    const platformNow = Math.min(this.now, Math.max(top, this.now - EVENTS_SETTLE_MS));
    const settling = Math.max(cur.settled, platformNow - EVENTS_SETTLE_MS);
    // The settle pass reads again what the other passes read, for events stored late, so it comes
    // first (every event is counted by it at the latest), unless what cut passes left fits in this
    // tick's pages: then they finish first. The fresh slice joining it is read by its pass.
    const joined = cur.pending === undefined && settling > cur.settled && cur.floor <= settling;
    const left = cur.behind.reduce((n, b) => n + b.left, 0);
    const leading =
      cur.behind.length === 0 ||
      joined ||
      left > (this.pages.maxPages - 2) * (EVENTS_PAGE_SIZE - 3) ||
      settling - cur.settled >= EVENTS_SETTLE_MS;
    let settle = leading ? await this.settle(first, settling, top, true) : undefined;
    // With the pages left: the new events first, then what earlier cut passes left, newest first.
    const behind: BehindPass[] = [];
    if (settle?.fresh !== false) {
      const pass = this.fromTop(Math.max(cur.floor, settling), first);
      if (!(await this.drain(pass))) behind.push(this.cut(pass, top));
    }
    for (const b of cur.behind) {
      // The settle pass read everything up to `settled`: only what is above it is left.
      const bottom = Math.max(b.bottom, settle?.settled ?? cur.settled);
      if (b.frontier < bottom) continue;
      const pass = new EventPass(bottom, b.frontier, b.offset, this.resumeHint(b, first), this.ref);
      pass.take(first);
      if (!(await this.drain(pass))) behind.push(this.cut(pass, top));
    }
    settle ??= await this.settle(first, settling, top, false);
    const { settled, pending } = settle;
    // Next tick's fresh pass stops at this top even if this one was cut: what it left is in `behind`.
    const floor = Number.isFinite(top) ? Math.max(cur.floor, top) : cur.floor;
    const value: EventCursor = {
      start: cur.start,
      settled,
      floor,
      top,
      recent: this.recent(settled),
      ...(pending ? { pending } : {}),
      // Past the bound, the oldest is left to the settle pass, which is nearest to it.
      behind: behind.slice(0, MAX_BEHIND),
      read: this.read,
      accepted: this.accepted,
      misplaced: this.misplaced,
      misplacedIds: [...this.misplacedIds].slice(-MAX_MISPLACED),
    };
    return { value, requests: pages.requests };
  }

  /**
   * The settle pass: goes on with a cut one, then settles up to `settling`. `leading`: it reads
   * before the other passes, with every page; then `fresh` false says that the fresh slice joins
   * the settle slice (or the target is near the top), and one pass from the top read both.
   */
  private async settle(
    first: Page,
    settling: number,
    top: number,
    leading: boolean,
  ): Promise<{ settled: number; pending?: PendingPass; fresh: boolean }> {
    const { cur, pages } = this;
    let settled = cur.settled;
    let pending = cur.pending;
    let target = pending?.target ?? settling;
    let fresh = true;
    let pass: EventPass | undefined;
    if (pending) {
      const hint = this.resumeHint(pending, first);
      pass = new EventPass(settled, pending.frontier, pending.offset, hint, this.ref);
      pass.take(first);
    }
    const resumed = pass;
    const before = { frontier: pending?.frontier, offset: pending?.offset };
    const next = (): EventPass | undefined => {
      // Without a page left a new pass would start from a poor guess: next tick places it.
      if (!(settling > settled) || pages.spent) return undefined;
      target = settling;
      const hint = this.targetHint(settling, first);
      // The target is within a page or two of the top, or the fresh pass would stop at it: one pass
      // from the top reads both, without looking for the target.
      if (leading && (hint <= NEAR_TOP || cur.floor <= settling)) {
        fresh = false;
        return this.fromTop(settled, first);
      }
      const pass = new EventPass(settled, settling, 0, hint, this.ref);
      pass.take(first);
      return pass;
    };
    pass ??= next();
    while (pass !== undefined) {
      if (!(await this.drain(pass))) {
        pending = { target, frontier: pass.frontier, offset: pass.offset, topThen: top };
        break;
      }
      settled = target;
      pending = undefined;
      pass = next();
    }
    // Every page spent and the cut pass neither went down nor came nearer: it never will.
    if (
      leading &&
      resumed !== undefined &&
      pages.spent &&
      !resumed.done &&
      resumed.frontier === before.frontier &&
      resumed.offset === before.offset
    )
      throw new EventsReadError(
        "ERR_EVENTS_NO_PROGRESS",
        `GET /events/sandboxes: ${pages.requests} pages read and the cut read found nothing past ${new Date(resumed.frontier).toISOString()} or below position ${resumed.offset}`,
      );
    return { settled, fresh, ...(pending ? { pending } : {}) };
  }

  /** Reads the pass's pages until it is done (true) or the page bound is spent (false). */
  private async drain(pass: EventPass): Promise<boolean> {
    while (!pass.done) {
      const page = await this.page(pass.next());
      if (page === undefined) return false;
      pass.take(page);
    }
    return true;
  }

  /** What a cut fresh pass leaves to the next ticks, with the events it is thought to hold. */
  private cut(pass: EventPass, top: number): BehindPass {
    const { bottom, frontier, offset } = pass;
    const span = this.ref ? this.ref.ts - frontier : 0;
    // As dense as the list above it: events per ms from the top down to where it stopped.
    const left = span > 0 && Number.isFinite(frontier) ? ((frontier - bottom) * offset) / span : 0;
    return { bottom, frontier, offset, topThen: top, left: Math.max(0, Math.round(left)) };
  }

  /** A pass from the top of the list down to `bottom`, which has the top page read already. */
  private fromTop(bottom: number, first: Page): EventPass {
    const pass = new EventPass(bottom, Number.POSITIVE_INFINITY, 0, 0, this.ref);
    pass.take(first);
    return pass;
  }

  /**
   * Where the events stamped at or before `target` begin, thought from what was read: the events
   * known above it, what cut passes left there, and the arrivals past the top page since the last
   * tick, as dense as the top page (a density over the whole span would spread a burst over the
   * quiet time below it).
   */
  private targetHint(target: number, first: Page): number {
    const rows = first.rows;
    const head = rows[0];
    const last = rows[rows.length - 1];
    if (!head || !last || last.e.timestamp <= target) return 0;
    let known = last.pos + 1;
    for (const ts of this.known.values()) if (ts > target && ts < last.e.timestamp) known++;
    for (const b of this.cur.behind)
      if (b.frontier > target)
        known += b.left * Math.min(1, (b.frontier - target) / Math.max(1, b.frontier - b.bottom));
    const unreadFrom = Math.max(this.cur.floor, target);
    if (head.e.timestamp > last.e.timestamp && last.e.timestamp > unreadFrom) {
      const perMs = (last.pos + 1) / (head.e.timestamp - last.e.timestamp);
      known += (last.e.timestamp - unreadFrom) * perMs;
    }
    return Math.round(known);
  }

  /** Where a cut pass is thought to be now: lower by the events that arrived above it since. */
  private resumeHint(p: { offset: number; topThen: number }, first: Page): number {
    const rows = first.rows;
    const below = rows.find((r) => r.e.timestamp <= p.topThen);
    if (below) return p.offset + below.pos;
    const head = rows[0];
    const last = rows[rows.length - 1];
    if (!head || !last || head.e.timestamp <= last.e.timestamp) return p.offset + first.length;
    const perMs = (last.pos + 1) / (head.e.timestamp - last.e.timestamp);
    return p.offset + Math.round((head.e.timestamp - p.topThen) * perMs);
  }

  /** Reads a page and passes on every event in it not read before. */
  private async page(offset: number): Promise<Page | undefined> {
    const page = await this.pages.get(offset);
    if (page === undefined) return undefined;
    const out = new Set(page.misplaced);
    for (const r of page.all) {
      // Stamped too far ahead, an event stays on top of the list until the clock catches up: it
      // is remembered with the misplaced (a bounded list), not among the ids `recent` keeps.
      if (out.has(r) || r.e.timestamp > this.latest) this.outOfPlace(r.e);
      else if (r.e.timestamp >= this.cur.settled) this.pass(r.e);
    }
    return page;
  }

  /** An event out of place is counted once if within the look-back, else dropped and counted. */
  private outOfPlace(e: LifecycleEvent): void {
    if (this.misplacedIds.has(e.id)) return;
    if (e.timestamp >= this.cur.start) this.pass(e);
    else this.misplaced++;
    this.misplacedIds.add(e.id);
  }

  private pass(e: LifecycleEvent): void {
    if (this.known.has(e.id) || this.misplacedIds.has(e.id)) return;
    // Remembered whatever its shard: the positions the passes estimate count every event.
    this.known.set(e.id, e.timestamp);
    if (!this.own(e.sandboxId)) {
      this.sink.otherShard?.(e);
      return;
    }
    this.read++;
    if (this.sink.accept(e, "poll")) this.accepted++;
  }

  /**
   * The ids to remember: stamped at or after `settled` and not ahead of `latest` (the newest first
   * under the cap would keep those for good), at most MAX_RECENT (the newest).
   */
  private recent(settled: number): ReadEvent[] {
    const out: ReadEvent[] = [];
    for (const [id, ts] of this.known) if (ts >= settled && ts <= this.latest) out.push([id, ts]);
    if (out.length <= MAX_RECENT) return out;
    return out.sort((a, b) => b[1] - a[1]).slice(0, MAX_RECENT);
  }
}
