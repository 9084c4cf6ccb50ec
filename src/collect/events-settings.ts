// The lifecycle-events collector's settings (under `poll:`).
import { z } from "zod";
import { bool, duration, int } from "../config/fields.js";
import type { SectionOf } from "../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";

const X = ENV_PREFIX;

export const eventsSlice = defineSlice({
  key: "poll",
  fields: {
    /** Read the team's sandbox lifecycle events (E2B's GET /events/sandboxes) every tick. */
    events: bool.default(false),
    /**
     * How far back the first read of events goes (0: only events after start). A restart within it
     * counts that window's events again; 0 loses the events of the downtime.
     */
    eventsLookbackMs: z
      .union([z.literal(0), z.literal("0"), z.literal("0s"), duration()])
      .transform((v) => (typeof v === "number" ? v : 0))
      .default(300_000),
    /**
     * Pages of 100 events read per tick at most (the settle pass first, then the fresh one). Every
     * event is read at most once per pass, so the rate carried is about (pages - 2) x 100 a tick.
     * At least 3: the top page, and two for a cut read to find where it goes on (with fewer it may never).
     */
    eventsMaxPages: int(3, 1_000).default(12),
  },
  settings: [
    {
      path: "poll.events",
      env: `${X}POLL_EVENTS`,
      flag: "poll-events",
      kind: "bool",
      help: "sandbox lifecycle events (E2B's GET /events/sandboxes): kills by reason, execution times",
      doc: "read the platform's lifecycle events (`GET /events/sandboxes`) every tick: why sandboxes end (see [Why did my sandbox end?](e2b.md#why-did-my-sandbox-end)). Every shard reads them and keeps its own sandboxes' events (the families sum across shards); after a burst each tick reads forward as far as `poll.eventsMaxPages` allows",
    },
    {
      path: "poll.eventsLookbackMs",
      env: `${X}POLL_EVENTS_LOOKBACK`,
      flag: "poll-events-lookback",
      kind: "duration",
      help: "how far back the first read of lifecycle events goes (0: only events after start)",
      doc: "how far back the first read after a start goes (`0` allowed). A restart within it counts that window's events again (a bump in `rate()`); with 0 the events of a downtime are lost",
    },
    {
      path: "poll.eventsMaxPages",
      env: `${X}POLL_EVENTS_MAX_PAGES`,
      flag: "poll-events-max-pages",
      kind: "int",
      help: "pages of 100 lifecycle events read per tick at most; the rest is read next tick",
      doc: "pages of 100 lifecycle events read per tick at most (3–1,000: the top page and two for a cut read to go on; the settle pass first, then the fresh pass); the rest is read next tick ([how many events that keeps up with](#lifecycle-events-per-tick))",
    },
  ],
});

declare module "./poll-settings.js" {
  interface PollSettings extends SectionOf<typeof eventsSlice> {}
}
