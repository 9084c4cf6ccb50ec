// Reading GET /events/sandboxes by offset without trusting the offsets. E2B pages a list ordered by
// timestamp, newest first: events arriving above push every older one down, so an offset names a
// different event from one request to the next. A page is therefore checked against the positions
// its events had earlier in the same read (an event never moves up), put in order (an event older
// than the two after it is out of place), and a pass finds where it goes on by timestamps: the
// offset before which every event is newer than its frontier only grows, whatever arrives.
import type { LifecycleEvent } from "../platform/events.js";
import { ExporterError } from "../util/errors.js";
import type { PlatformReader } from "./collector.js";

/** E2B's largest page of events. */
export const EVENTS_PAGE_SIZE = 100;
/** Slots at the end of a full page that the next page reads again: their order is decided there. */
const OVERLAP = 2;
/** Positions a page reaches back before where the frontier is bracketed, for arrivals meanwhile. */
const SLACK = 10;
/** A probe aimed at an estimate starts this far above it: the estimate falls mid-page. */
const HALF = EVENTS_PAGE_SIZE / 2;
/**
 * Positions an event may move up between two requests and the list still be taken as paged by
 * offset: ClickHouse may order events of the very same timestamp differently from one query to the next.
 */
const TIE_SHIFT = 10;
/** Farthest one probe jumps past what it knows, in positions. */
const MAX_JUMP = 1_000 * EVENTS_PAGE_SIZE;

/** A read of the events list that cannot go on: the pages contradict each other. */
export class EventsReadError extends ExporterError {}

/** One event of a page and its position in the list when the page was read. */
export interface Row {
  readonly e: LifecycleEvent;
  readonly pos: number;
}

/** One page, put in order. */
export interface Page {
  readonly offset: number;
  /** Slots received, bad records included. */
  readonly length: number;
  /** A full page: the list may go on, and its last OVERLAP slots are left undecided. */
  readonly full: boolean;
  /** Every event received, in list order. */
  readonly all: readonly Row[];
  /** The events in place (none newer than the one before it, bar misordering of one), decided. */
  readonly rows: readonly Row[];
  /** Events older than the two events after them: not in their place, never a cursor. */
  readonly misplaced: readonly Row[];
}

/** The pages of one read: at most `maxPages` requests, each page checked against the earlier ones. */
export class PageReader {
  requests = 0;
  /** Event id -> the latest position it was met at in this read. */
  private readonly seenAt = new Map<string, number>();

  constructor(
    private readonly reader: PlatformReader,
    readonly maxPages: number,
    /** Events stamped after this (the clock plus the skew allowed) are counted but never ordered. */
    private readonly latest: number,
  ) {}

  get spent(): boolean {
    return this.requests >= this.maxPages;
  }

  /**
   * The page at `offset`; undefined once the page bound is spent. Throws ERR_EVENTS_OFFSET_IGNORED
   * when an event shows up at a position above one it was met at: the list never moves up.
   */
  async get(offset: number): Promise<Page | undefined> {
    const got = await this.fetch(offset);
    if (got === undefined) return undefined;
    // A full page of events all met before, elsewhere: either a page's worth arrived between two
    // requests, or the server ignores `offset`. Reading where they were met tells which.
    if (got.repeatedFrom !== undefined && (await this.fetch(got.repeatedFrom)) === undefined)
      return undefined;
    return this.order(offset, got.length, got.rows);
  }

  private async fetch(
    offset: number,
  ): Promise<{ length: number; rows: Row[]; repeatedFrom?: number } | undefined> {
    if (this.spent) return undefined;
    const page = await this.reader.listSandboxEvents({ offset, limit: EVENTS_PAGE_SIZE });
    this.requests++;
    const rows: Row[] = [];
    page.items.forEach((e, i) => {
      if (e !== undefined) rows.push({ e, pos: offset + i });
    });
    let moved = 0;
    let from = Number.POSITIVE_INFINITY;
    for (const r of rows) {
      const was = this.seenAt.get(r.e.id);
      if (was === undefined) continue;
      if (r.pos < was - TIE_SHIFT)
        throw new EventsReadError(
          "ERR_EVENTS_OFFSET_IGNORED",
          `GET /events/sandboxes: event ${r.e.id} was at position ${was} and is now at ${r.pos}; the list only grows above, so the server does not page by offset`,
        );
      if (r.pos !== was) moved++;
      from = Math.min(from, was);
    }
    for (const r of rows) this.seenAt.set(r.e.id, r.pos);
    const repeated = page.items.length >= EVENTS_PAGE_SIZE && moved === page.items.length;
    return { length: page.items.length, rows, ...(repeated ? { repeatedFrom: from } : {}) };
  }

  /** Decides, from the end, which events are out of place; the last OVERLAP slots of a full page wait. */
  private order(offset: number, length: number, all: Row[]): Page {
    const full = length >= EVENTS_PAGE_SIZE;
    const kept: Row[] = [];
    const misplaced: Row[] = [];
    for (let i = all.length - 1; i >= 0; i--) {
      const r = all[i] as Row;
      if (r.e.timestamp > this.latest) continue;
      const a = kept[kept.length - 1];
      const b = kept[kept.length - 2];
      if (a && b && r.e.timestamp < a.e.timestamp && r.e.timestamp < b.e.timestamp)
        misplaced.push(r);
      else kept.push(r);
    }
    const decidedBelow = full ? offset + length - OVERLAP : Number.POSITIVE_INFINITY;
    const rows = kept.reverse().filter((r) => r.pos < decidedBelow);
    return { offset, length, full, all, rows, misplaced };
  }
}

/**
 * One pass down the list: reads every event stamped from `frontier` down to `bottom`. Where it goes
 * on is found by timestamps: `offset` is a position before which every event is stamped after the
 * frontier, which arrivals above only push down, so it holds from one request (or tick) to the next.
 */
export class EventPass {
  done = false;
  /** A position whose event is stamped at or before the frontier (this read only: arrivals move it). */
  private hi: number | undefined;
  /** Timestamps just above `offset` and at `hi`, to interpolate between; bisect every other time. */
  private loTs: number | undefined;
  private hiTs: number | undefined;
  private bisect = false;
  /** The last probe fell past the end of the list: the next reads the page just before it (once). */
  private pastEnd = false;
  private steppedBack = false;
  private step = EVENTS_PAGE_SIZE;

  constructor(
    /** Oldest timestamp the pass reads (inclusive). */
    readonly bottom: number,
    /** Every event stamped after it, down to where the pass began, is read; ties are met again. */
    public frontier: number,
    public offset: number,
    /** Where the frontier is thought to be now. */
    private hint: number,
    /** The newest event of the list (position 0): events per millisecond, for estimates. */
    private readonly ref: { ts: number } | undefined,
  ) {}

  /** The offset to read next. */
  next(): number {
    if (this.hi === undefined) return Math.max(this.offset, this.hint - HALF);
    const gap = this.hi - this.offset;
    if (gap <= EVENTS_PAGE_SIZE - SLACK) return this.offset;
    // An estimate a little past a list's end (the quiet time below a burst) is mostly just past.
    if (this.pastEnd) {
      this.pastEnd = false;
      return Math.max(this.offset, this.hi - EVENTS_PAGE_SIZE + SLACK);
    }
    let at = this.offset + Math.floor(gap / 2);
    const { loTs, hiTs } = this;
    if (!this.bisect && loTs !== undefined && hiTs !== undefined && loTs > hiTs)
      at = this.offset + Math.round((gap * (loTs - this.frontier)) / (loTs - hiTs));
    this.bisect = !this.bisect;
    return Math.min(this.hi - SLACK, Math.max(this.offset, at - HALF));
  }

  /** Takes a page: moves the frontier over the events it reads, or narrows where it goes on. */
  take(page: Page): void {
    const { rows } = page;
    const j = rows.findIndex((r) => r.e.timestamp <= this.frontier);
    // Contiguous with what the pass read: the page starts where it may go on, or holds an event
    // stamped after the frontier before the first one at or before it.
    const joined = page.offset <= this.offset || j > 0;
    if (j < 0) {
      if (!page.full && (joined || rows.length > 0)) {
        // The list ends above the frontier: nothing older is left.
        this.done = true;
        return;
      }
      if (rows.length === 0 && !joined) {
        this.pastEnd = page.length === 0 && !this.steppedBack;
        this.steppedBack ||= this.pastEnd;
        this.hi = page.offset;
        this.hiTs = undefined;
        return;
      }
      const last = rows[rows.length - 1];
      this.offset = Math.max(
        this.offset,
        last ? last.pos + 1 : page.offset + page.length - OVERLAP,
      );
      this.loTs = last?.e.timestamp;
      if (this.hi !== undefined && this.hi <= this.offset) this.hi = undefined;
      // A hint this page did not reach stands; past it, estimate.
      if (page.offset + page.length > this.hint) this.hint = this.offset + this.jump(last);
      return;
    }
    if (!joined) {
      // Events at or before the frontier with unread positions above them: look higher.
      const first = rows[j] as Row;
      this.hi = first.pos;
      this.hiTs = first.e.timestamp;
      return;
    }
    let tieAt: number | undefined;
    for (const r of rows.slice(j)) {
      const ts = r.e.timestamp;
      if (ts < this.bottom) {
        this.done = true;
        return;
      }
      if (ts < this.frontier) {
        this.frontier = ts;
        tieAt = r.pos;
      } else if (ts === this.frontier && tieAt === undefined) tieAt = r.pos;
    }
    if (!page.full) {
      this.done = true;
      return;
    }
    // Go on from the first event at the frontier (its ties are read again and skipped by id); a
    // page of one timestamp only is passed by its offset.
    const end = page.offset + page.length - OVERLAP;
    const from = tieAt ?? end;
    this.offset = from > page.offset ? Math.min(from, end) : end;
    this.hint = this.offset;
    this.hi = undefined;
    this.step = EVENTS_PAGE_SIZE;
  }

  /** How far past `last` the frontier probably is: by the list's density above, else doubling. */
  private jump(last: Row | undefined): number {
    let est = this.step;
    if (last && this.ref && this.ref.ts > last.e.timestamp) {
      const perMs = (last.pos + 1) / (this.ref.ts - last.e.timestamp);
      est = Math.round((last.e.timestamp - this.frontier) * perMs);
    } else this.step *= 2;
    return Math.min(MAX_JUMP, Math.max(0, est));
  }
}
