// Lifecycle events (poll.events, off by default): reads GET /events/sandboxes, newest first, and
// passes each new event to the sink (the ledger that counts them and de-duplicates them with the
// webhook's). Cluster-wide (shard 0).
//
// E2B stores events late (orchestrators publish them, ClickHouse takes them in batches), so an
// event can appear below newer ones. Each tick makes up to two passes down the list, which
// `event-pages.ts` positions by timestamps, never by trusting an offset:
// - the settle pass reads, once, the slice of events stamped from `settled` up to a target
//   EVENTS_SETTLE_MS behind the newest event (and the clock): nothing stamped there can arrive any
//   more, so once read it is final. A pass cut by the page bound goes on next tick from its frontier.
//   It comes first: every event is counted by it at the latest.
// - the fresh pass, with the pages left, reads from the top down to where the last one ended, so
//   most events are counted a tick after they happen. Cut, it is dropped: the settle pass follows.
// Ids read and stamped after `settled` are remembered, so an event read twice is passed on once.
import type { TickCollector } from "./collector.js";
import { EVENTS_PAGE_SIZE } from "./event-pages.js";
import { EVENTS_MAX_SKEW_MS, EVENTS_SETTLE_MS, EventsRead } from "./events-read.js";
import { eventsSlice } from "./events-settings.js";

export { EVENTS_MAX_SKEW_MS, EVENTS_PAGE_SIZE, EVENTS_SETTLE_MS };

/** An event already read: its id and timestamp (epoch ms). */
export type ReadEvent = readonly [id: string, timestamp: number];

/** Where the events already read end: the collector's data, carried from tick to tick. */
export interface EventCursor {
  /** The first read's lower bound (start minus the look-back): nothing older is read, ever. */
  start: number;
  /** Every event stamped before it has been read after it could no longer arrive: final. */
  settled: number;
  /** The newest timestamp of the last fresh pass that reached its end: the next one stops there. */
  floor: number;
  /** The newest timestamp seen at the top of the list (not ahead of the clock); -Infinity: none. */
  top: number;
  /** Events read stamped at or after `settled`: met again, skipped by id. */
  recent: readonly ReadEvent[];
  /** A settle pass cut by the page bound, to go on with next tick. */
  pending?: PendingPass;
  /** Events of the latest read passed to the sink, and how many of them were new to it. */
  read: number;
  accepted: number;
  /** Events dropped, in total, for being stamped before `start` out of their place in the list. */
  misplaced: number;
  /** Ids of events met out of place, or stamped too far ahead (counted or dropped once). */
  misplacedIds: readonly string[];
}

/** Where a cut settle pass stopped. */
export interface PendingPass {
  /** The slice it settles: [settled, target]. */
  target: number;
  /** Every event of the slice stamped after it is read. */
  frontier: number;
  /** A position before which every event was stamped after the frontier (arrivals only push it down). */
  offset: number;
  /** The top of the list when it stopped: the events above it now arrived since. */
  topThen: number;
}

declare module "./snapshot.js" {
  interface TickData {
    events: EventCursor;
  }
}

export const eventsCollector: TickCollector<"events", typeof eventsSlice> = {
  name: "events",
  optional: true,
  optIn: "events",
  settings: eventsSlice,
  runs: (where) => where.clusterWide && where.optIn.has("events"),
  read: async (ctx, previous) => {
    const sink = ctx.eventSink;
    // First read: go back poll.eventsLookbackMs (0: only events from now on).
    const from = ctx.clock.now() - (sink ? ctx.poll.eventsLookbackMs : 0);
    const cur: EventCursor = previous ?? {
      start: from,
      settled: from,
      floor: from,
      top: Number.NEGATIVE_INFINITY,
      recent: [],
      read: 0,
      accepted: 0,
      misplaced: 0,
      misplacedIds: [],
    };
    if (sink === undefined) return { value: cur, requests: 0 };
    return new EventsRead(ctx, sink, cur).run();
  },
};
