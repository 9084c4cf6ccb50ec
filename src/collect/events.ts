// Lifecycle events (poll.events, off by default): reads GET /events/sandboxes, newest first, and
// passes each new event of this shard's sandboxes to the sink (the ledger that counts them and
// de-duplicates them with the webhook's). Every shard reads the list and keeps its own sandboxes'
// events (the shard is applied here, where the records arrive): the families and the cost it feeds
// are per shard and sum across shards; another shard's event only tells the team id.
//
// E2B stores events late (orchestrators publish them, ClickHouse takes them in batches), so an
// event can appear below newer ones. Each tick reads down the list in passes, which
// `event-pages.ts` positions by timestamps, never by trusting an offset:
// - the settle pass reads, once, the slice of events stamped from `settled` up to a target
//   EVENTS_SETTLE_MS behind the newest event (and the clock): nothing stamped there can arrive any
//   more, so once read it is final. A pass cut by the page bound goes on next tick from its frontier.
//   It comes first: every event is counted by it at the latest.
// - the fresh pass, with the pages left, reads from the top down to where the last one began, so
//   most events are counted a tick after they happen.
// - a fresh pass cut by the page bound is kept (`behind`) and goes on, newest first, with the pages
//   left on the next ticks: after a burst every tick counts what its pages allow, instead of
//   waiting for the settle pass. What the settle pass reads first is dropped from it.
// Ids read and stamped after `settled` are remembered, so an event read twice is passed on once.
import { inShard } from "../util/shard.js";
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
  /** Fresh passes cut by the page bound, newest first, to go on with the pages left next tick. */
  behind: readonly BehindPass[];
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

/** Where a cut fresh pass stopped: what is left of it is [bottom, frontier]. */
export interface BehindPass {
  /** The oldest timestamp it reads (the fresh pass's own bottom, raised as the settle pass reads). */
  bottom: number;
  frontier: number;
  offset: number;
  topThen: number;
  /** The events it is thought to hold still: where a settle target below it is looked for. */
  left: number;
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
  // Every shard: each keeps its own sandboxes' events.
  runs: () => true,
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
      behind: [],
      read: 0,
      accepted: 0,
      misplaced: 0,
      misplacedIds: [],
    };
    if (sink === undefined) return { value: cur, requests: 0 };
    const shard = ctx.shard;
    const own =
      shard === undefined || shard.total <= 1
        ? () => true
        : (sandboxId: string) => inShard(sandboxId, shard.index, shard.total);
    return new EventsRead(ctx, sink, cur, own).run();
  },
};
