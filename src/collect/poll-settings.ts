// The `poll:` core settings: when the poller ticks and how it walks the sandbox list. Each
// collector with settings of its own adds them to `poll` in its own slice (*-settings.ts).
import { z } from "zod";
import { bool, duration, int, schedule, text } from "../config/fields.js";
import { defineSlice, ENV_PREFIX, type SectionOf } from "../config/slice.js";

const X = ENV_PREFIX;

/** A share in (0, 1]. */
const ratio = z
  .number({ error: "a number above 0 and at most 1" })
  .gt(0, { error: "a number above 0 and at most 1" })
  .max(1, { error: "a number above 0 and at most 1" });

export const pollSlice = defineSlice({
  key: "poll",
  fields: {
    schedule: schedule.prefault("15s"),
    pageLimit: int(1, 10_000).default(100),
    /** A guard against endless paging, far above any fleet (repeated or empty-page tokens end a walk too). */
    maxPages: int(1).default(100_000),
    /** Passed as the list's state= filter. */
    state: text.optional(),
    /** Passed as the list's metadata= filter. */
    metadata: text.optional(),
    nodeDetails: bool.default(false),
    templateDetails: bool.default(false),
    /** A walk whose sandbox count falls by more than this share of the last complete walk is walked again. */
    confirmDropRatio: ratio.default(0.5),
    /** How often a collector the platform does not serve (404/405/403) is tried again. */
    capabilityRecheckMs: duration().default(600_000),
    /** Ceiling of the backoff between failed sandbox walks. */
    maxBackoffMs: duration().default(300_000),
    /** Longest one sandbox walk may take; then it is abandoned as incomplete. Default 4 poll intervals. */
    maxWalkMs: duration().optional(),
    /** Pages of an inventory list (snapshots, volumes, templates) read in one tick; the rest next tick. */
    listPagesPerTick: int(1).default(100),
    /** Longest an inventory list reads in one tick; the rest next tick. Default half a poll interval. */
    listMaxMs: duration().optional(),
    /** Read the CPU, memory and disk use of this shard's running sandboxes (GET /sandboxes/metrics). */
    usage: bool.default(false),
    /** Least time between two usage reads; each follows a complete sandbox walk. */
    usageIntervalMs: duration().default(60_000),
  },
  settings: [
    {
      path: "poll.schedule",
      env: `${X}POLL_SCHEDULE`,
      flag: "poll-schedule",
      kind: "string",
      help: "poll interval (15s) or cron expression",
    },
    {
      path: "poll.pageLimit",
      env: `${X}PAGE_LIMIT`,
      flag: "page-limit",
      kind: "int",
      help: "limit= of each /v2/sandboxes page",
    },
    {
      path: "poll.maxPages",
      env: `${X}MAX_PAGES`,
      flag: "max-pages",
      kind: "int",
      help: "page ceiling of one sandbox walk",
      doc: "page ceiling of one sandbox walk (a guard against endless paging; raise it for more than pageLimit × maxPages sandboxes)",
    },
    {
      path: "poll.confirmDropRatio",
      env: `${X}CONFIRM_DROP_RATIO`,
      flag: "confirm-drop-ratio",
      kind: "number",
      help: "a walk whose sandbox count falls by more than this share is confirmed by a second walk",
      doc: "a sandbox walk whose count falls by more than this share (above 0, at most 1) of the last complete walk is confirmed by a second walk",
    },
    {
      path: "poll.capabilityRecheckMs",
      env: `${X}CAPABILITY_RECHECK`,
      flag: "capability-recheck",
      kind: "duration",
      help: "how often a collector the platform does not serve (404/405/403) is tried again",
      doc: "how often a collector the platform does not serve (404/405/403 before any success) is tried again",
    },
    {
      path: "poll.maxBackoffMs",
      env: `${X}POLL_MAX_BACKOFF`,
      flag: "poll-max-backoff",
      kind: "duration",
      help: "ceiling of the backoff between failed sandbox walks",
      doc: "ceiling of the backoff between failed sandbox walks (it doubles from one interval)",
    },
    {
      path: "poll.maxWalkMs",
      env: `${X}POLL_MAX_WALK`,
      flag: "poll-max-walk",
      kind: "duration",
      help: "longest one sandbox walk may take before it is abandoned as incomplete",
      doc: "longest one sandbox walk (drop confirmation included) may take; then it is abandoned as incomplete and counted in `sandbox_exporter_sandbox_walks_abandoned_total`",
      shownDefault: "4 poll intervals",
    },
    {
      path: "poll.listPagesPerTick",
      env: `${X}LIST_PAGES_PER_TICK`,
      flag: "list-pages-per-tick",
      kind: "int",
      help: "pages of an inventory list (snapshots, volumes, templates) read per tick",
      doc: "pages of an inventory list (`/snapshots`, `/volumes`, `/v2/templates`) read in one tick; a longer list goes on from the saved token next tick, the last complete one published meanwhile",
    },
    {
      path: "poll.listMaxMs",
      env: `${X}LIST_MAX_TIME`,
      flag: "list-max-time",
      kind: "duration",
      help: "longest an inventory list reads per tick; the rest is read next tick",
      shownDefault: "half a poll interval",
    },
    {
      path: "poll.usage",
      env: `${X}POLL_USAGE`,
      flag: "poll-usage",
      kind: "bool",
      help: "read the CPU, memory and disk use of this shard's running sandboxes (GET /sandboxes/metrics)",
      doc: "read the CPU, memory and disk use of this shard's running sandboxes (`GET /sandboxes/metrics`, 100 ids a request) after a complete walk",
    },
    {
      path: "poll.usageIntervalMs",
      env: `${X}POLL_USAGE_INTERVAL`,
      flag: "poll-usage-interval",
      kind: "duration",
      help: "least time between two usage reads (each follows a complete sandbox walk)",
      doc: "least time between two usage reads; a read starts only after a complete walk and starts no request after one poll interval",
    },
    {
      path: "poll.state",
      env: `${X}STATE_FILTER`,
      flag: "state-filter",
      kind: "string",
      help: "state= filter of the sandbox list",
    },
    {
      path: "poll.metadata",
      env: `${X}METADATA_FILTER`,
      flag: "metadata-filter",
      kind: "string",
      help: "metadata= filter of the sandbox list",
    },
    {
      path: "poll.nodeDetails",
      env: `${X}NODE_DETAILS`,
      flag: "node-details",
      kind: "bool",
      help: "also read /nodes/{id}",
    },
    {
      path: "poll.templateDetails",
      env: `${X}TEMPLATE_DETAILS`,
      flag: "template-details",
      kind: "bool",
      help: "also read /templates/{id}",
    },
  ],
});

/** The poll settings (config.poll): the poll's own, and each collector's slice (added by its file). */
export interface PollSettings extends SectionOf<typeof pollSlice> {}

declare module "../config/settings.js" {
  interface Settings {
    poll: PollSettings;
  }
}
