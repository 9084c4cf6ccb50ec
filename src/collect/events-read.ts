// One tick's read of the lifecycle events (see events.ts for the passes it makes): the settle
// pass, then the fresh one, each positioned by timestamps; ids read are remembered to be passed once.
import type { LifecycleEvent, LifecycleEventSink } from "../platform/events.js";
import type { TickContext } from "./collector.js";
import {
  EVENTS_PAGE_SIZE,
  EventPass,
  EventsReadError,
  type Page,
  PageReader,
} from "./event-pages.js";
import type { EventCursor, PendingPass, ReadEvent } from "./events.js";

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

  constructor(
    ctx: TickContext,
    private readonly sink: LifecycleEventSink,
    private readonly cur: EventCursor,
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
    const top = Math.max(cur.top, newest?.e.timestamp ?? Number.NEGATIVE_INFINITY);
    // Stamped before this, an event is stored by now: E2B's time is the newest event's, or our
    // clock less the margin once none came for that long (so a quiet list settles too).
    const platformNow = Math.min(this.now, Math.max(top, this.now - EVENTS_SETTLE_MS));
    const settling = Math.max(cur.settled, platformNow - EVENTS_SETTLE_MS);
    const ref = newest ? { ts: newest.e.timestamp } : undefined;
    const freshBottom = Math.max(cur.floor, settling);
    let fresh: EventPass | undefined = this.fromTop(freshBottom, first, ref);

    let settled = cur.settled;
    let pending = cur.pending;
    let target = pending?.target ?? settling;
    let pass: EventPass | undefined;
    if (pending) {
      const hint = this.resumeHint(pending, first);
      pass = new EventPass(settled, pending.frontier, pending.offset, hint, ref);
      pass.take(first);
    }
    const resumed = pass;
    const before = { frontier: pending?.frontier, offset: pending?.offset };
    const next = (): EventPass | undefined => {
      if (!(settling > settled)) return undefined;
      target = settling;
      const hint = this.targetHint(settling, first);
      // The target is within a page or two of the top: one pass from there reads both.
      if (hint <= NEAR_TOP) {
        fresh = undefined;
        return this.fromTop(settled, first, ref);
      }
      const pass = new EventPass(settled, settling, 0, hint, ref);
      pass.take(first);
      return pass;
    };
    pass ??= next();
    while (pass !== undefined) {
      while (!pass.done) {
        const page = await this.page(pass.next());
        if (page === undefined) break;
        pass.take(page);
      }
      if (!pass.done) {
        pending = { target, frontier: pass.frontier, offset: pass.offset, topThen: top };
        break;
      }
      settled = target;
      pending = undefined;
      pass = next();
    }
    // Every page spent and the cut pass neither went down nor came nearer: it never will.
    if (
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

    while (fresh !== undefined && !fresh.done) {
      const page = await this.page(fresh.next());
      if (page === undefined) break;
      fresh.take(page);
    }
    // Next tick's fresh pass stops at this top even if this one was cut: what it left is read by
    // the settle pass, not by reading the same pages again every tick.
    const floor = Number.isFinite(top) ? Math.max(cur.floor, top) : cur.floor;
    const value: EventCursor = {
      start: cur.start,
      settled,
      floor,
      top,
      recent: this.recent(settled),
      ...(pending ? { pending } : {}),
      read: this.read,
      accepted: this.accepted,
      misplaced: this.misplaced,
      misplacedIds: [...this.misplacedIds].slice(-MAX_MISPLACED),
    };
    return { value, requests: pages.requests };
  }

  /** A pass from the top of the list down to `bottom`, which has the top page read already. */
  private fromTop(bottom: number, first: Page, ref: { ts: number } | undefined): EventPass {
    const pass = new EventPass(bottom, Number.POSITIVE_INFINITY, 0, 0, ref);
    pass.take(first);
    return pass;
  }

  /** A settle pass over [settled, target], if anything is left to settle. */
  /**
   * Where the events stamped at or before `target` begin, thought from the top page: below it by
   * the events known between, or as many as its own density says, whichever is more.
   */
  private targetHint(target: number, first: Page): number {
    const rows = first.rows;
    const head = rows[0];
    const last = rows[rows.length - 1];
    if (!head || !last || last.e.timestamp <= target) return 0;
    let known = last.pos + 1;
    for (const ts of this.known.values()) if (ts > target && ts < last.e.timestamp) known++;
    if (head.e.timestamp <= last.e.timestamp) return known;
    const perMs = (last.pos + 1) / (head.e.timestamp - last.e.timestamp);
    return Math.max(known, Math.round((head.e.timestamp - target) * perMs));
  }

  /** Where a cut pass is thought to be now: lower by the events that arrived above it since. */
  private resumeHint(p: PendingPass, first: Page): number {
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
    this.known.set(e.id, e.timestamp);
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
