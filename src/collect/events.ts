// Lifecycle events (poll.events, off by default): reads GET /events/sandboxes newest first, from
// the top down to the events already read, and passes each new event to the sink (the ledger that
// counts them and de-duplicates them with the webhook's). Cluster-wide (shard 0).
//
// E2B pages by offset, newest first: an event arriving between two pages pushes the list down, so
// the next page starts with events already read (skipped by id; none is lost). The walk stops at the
// cursor (the newest event of the last complete walk, less a settle margin for events stored
// late). At most `maxPages` pages a tick: a walk cut there goes on next tick where it stopped,
// shifted by the events that arrived above it (found by the position of its first event).
import type { LifecycleEvent } from "../platform/events.js";
import type { TickCollector, TickContext } from "./collector.js";

/** E2B's largest page of events. */
export const EVENTS_PAGE_SIZE = 100;
/** Pages read per tick at most when the setting gives none; the rest is read next tick. */
export const DEFAULT_EVENTS_MAX_PAGES = 10;
/**
 * How far below the newest event read each walk reads again: E2B stores events asynchronously
 * (orchestrators publish them, ClickHouse takes them in batches), so one can appear after newer ones.
 */
export const EVENTS_SETTLE_MS = 60_000;
/**
 * How far ahead of our clock an event may be stamped and still move the cursor: one stamped further
 * (a bad clock, a bad record) is counted, but would otherwise stop every later walk at once.
 */
export const EVENTS_MAX_SKEW_MS = 5 * 60_000;
/** Ids of the settle margin remembered at most (the newest). */
const MAX_RECENT = 10_000;

/** An event already read: its id and timestamp (epoch ms). */
export type ReadEvent = readonly [id: string, timestamp: number];

/** Where the events already read end: the collector's data, carried from tick to tick. */
export interface EventCursor {
  /** The first read's lower bound (start minus the look-back): nothing older is read, ever. */
  start: number;
  /** The newest timestamp of the last complete walk: every event older was read. */
  floor: number;
  /** Events read within EVENTS_SETTLE_MS below `floor`: read again, skipped by id. */
  recent: readonly ReadEvent[];
  /** A walk cut by the page bound, to go on with next tick. */
  pending?: PendingWalk;
  /** Events of the latest read passed to the sink, and how many of them were new to it. */
  read: number;
  accepted: number;
}

/** Where a cut walk stopped. */
export interface PendingWalk {
  /** The first event of the walk, and its position then: the events above it now are new. */
  anchorId: string;
  anchorPos: number;
  /** The first offset not read, as positions were when the walk stopped. */
  offset: number;
  /** The newest timestamp read in the cut walk: the floor once it completes. */
  top: number;
  /** Its events within EVENTS_SETTLE_MS below `top`. */
  recent: readonly ReadEvent[];
}

declare module "./snapshot.js" {
  interface TickData {
    events: EventCursor;
  }
}

export const eventsCollector: TickCollector<"events"> = {
  name: "events",
  optional: true,
  runs: (where) => where.clusterWide && where.optIn.has("events"),
  read: async (ctx, previous) => {
    const feed = ctx.events;
    // First read: go back poll.eventsLookbackMs (0: only events from now on).
    const from = ctx.clock.now() - (feed?.lookbackMs ?? 0);
    const cur: EventCursor = previous ?? {
      start: from,
      floor: from,
      recent: [],
      read: 0,
      accepted: 0,
    };
    if (feed === undefined) return { value: cur, requests: 0 };
    return walk(ctx, feed, cur);
  },
};

type Feed = NonNullable<TickContext["events"]>;

async function walk(ctx: TickContext, feed: Feed, cur: EventCursor) {
  const maxPages = Math.max(1, feed.maxPages ?? DEFAULT_EVENTS_MAX_PAGES);
  const pending = cur.pending;
  // Read again down to the settle margin: an event stored late, under an older timestamp, is
  // found there; the ones already read are skipped by id.
  const stopBelow = Math.max(cur.start, cur.floor - EVENTS_SETTLE_MS);
  const known = new Set([...cur.recent, ...(pending?.recent ?? [])].map(([id]) => id));
  // Ids met this walk: a page shifted by new arrivals repeats the previous page's tail.
  const seen = new Set<string>();
  const met: ReadEvent[] = [];
  let top = pending?.top ?? Number.NEGATIVE_INFINITY;
  let anchor: { id: string; pos: number } | undefined;
  // Events met again because arrivals pushed the list down between two pages: the anchor is that
  // much lower by the end of the walk, where `offset` is measured.
  let drift = 0;
  const latest = ctx.clock.now() + EVENTS_MAX_SKEW_MS;
  let offset = 0;
  let requests = 0;
  let jumped = false;
  let done = false;
  let read = 0;
  let accepted = 0;
  const pass = (e: LifecycleEvent): void => {
    if (seen.has(e.id)) {
      drift++;
      return;
    }
    seen.add(e.id);
    met.push([e.id, e.timestamp]);
    if (e.timestamp > top && e.timestamp <= latest) top = e.timestamp;
    if (known.has(e.id)) return;
    read++;
    if (feed.sink.accept(e, "poll")) accepted++;
  };
  while (!done && requests < maxPages) {
    const page = await ctx.reader.listSandboxEvents({ offset, limit: EVENTS_PAGE_SIZE });
    requests++;
    let next = offset + page.items.length;
    let jumpedHere = false;
    for (const [i, e] of page.items.entries()) {
      if (e === undefined) continue;
      if (anchor === undefined) anchor = { id: e.id, pos: offset + i };
      if (pending && !jumped && e.id === pending.anchorId) {
        // The cut walk's first event, now lower by the events that arrived since: go on where
        // that walk stopped, as far down.
        next = pending.offset + (offset + i - pending.anchorPos);
        jumped = jumpedHere = true;
        break;
      }
      if (e.timestamp < stopBelow) {
        done = true;
        break;
      }
      pass(e);
    }
    // A short page is the end of the list (or of the retention).
    if (!jumpedHere && page.items.length < EVENTS_PAGE_SIZE) done = true;
    offset = next;
  }
  const stats = { read, accepted };
  const base = { start: cur.start, floor: cur.floor, recent: cur.recent, ...stats };
  if (done) {
    const floor = Math.max(cur.floor, top);
    const recent = within([...cur.recent, ...(pending?.recent ?? []), ...met], floor);
    return { value: { ...base, floor, recent }, requests };
  }
  // Cut by the page bound. Without reaching the old anchor the old cut walk still stands (what
  // was read above it is read again next tick and counted once by the sink).
  if ((pending && !jumped) || anchor === undefined || met.length === 0) {
    return { value: pending ? { ...base, pending } : base, requests };
  }
  const recent = within([...(pending?.recent ?? []), ...met], top);
  const cut: PendingWalk = {
    anchorId: anchor.id,
    anchorPos: anchor.pos + drift,
    offset,
    top,
    recent,
  };
  return { value: { ...base, pending: cut }, requests };
}

/** The events within the settle margin below `floor`, each once, at most MAX_RECENT (newest). */
function within(events: readonly ReadEvent[], floor: number): ReadEvent[] {
  const byId = new Map<string, number>();
  for (const [id, ts] of events) if (ts >= floor - EVENTS_SETTLE_MS) byId.set(id, ts);
  const out = [...byId];
  if (out.length <= MAX_RECENT) return out;
  return out.sort((a, b) => b[1] - a[1]).slice(0, MAX_RECENT);
}
