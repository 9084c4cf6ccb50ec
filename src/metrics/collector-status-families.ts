// The poller's own health per collector, from the snapshot (data age is computed at scrape time).
import { forEachRow } from "../collect/sandbox-table.js";
import { collectorStatuses, type Snapshot } from "../collect/snapshot.js";
import { family, gauge, setting, TEAM_LABEL } from "../exposition/descriptor.js";
import { type Family, labels } from "../exposition/text.js";

export const COLLECT_DURATION = gauge(
  "exporter_collect_duration_seconds",
  "Duration of the collector's requests in the last poll cycle.",
  ["collector", TEAM_LABEL],
);
export const COLLECT_SUCCESS = gauge(
  "exporter_collect_success",
  "1 when the collector succeeded in the last poll cycle, else 0.",
  ["collector", TEAM_LABEL],
);
export const LAST_SUCCESS = gauge(
  "exporter_last_success_timestamp_seconds",
  "Unix time the collector last succeeded.",
  ["collector", TEAM_LABEL],
);
export const COLLECTOR_SUPPORTED = gauge(
  "exporter_collector_supported",
  "1 when the platform serves the collector's endpoint; 0 when it answered 404, 405 or 403 before any success (re-checked every poll.capabilityRecheck). An unsupported collector exports no success or stale series.",
  ["collector", TEAM_LABEL],
);
export const LIST_TRUNCATED = gauge(
  "exporter_list_truncated",
  "1 when the last read of a paged inventory list (GET /snapshots, /volumes, /v2/templates) stopped short of its end: at its page or time limit per tick (poll.listPagesPerTick, poll.listMaxMs; the next tick reads on) or on bad paging (a loop). What was read is published; see /status for why.",
  ["list", TEAM_LABEL],
);
export const USAGE_IDS_SKIPPED = gauge(
  "exporter_usage_ids_skipped",
  "Sandboxes left out of the last usage read (GET /sandboxes/metrics) because their id alone is too long for a request line.",
  [],
  { on: setting("poll.usage") },
);
export const LAST_CYCLE = gauge(
  "exporter_last_cycle_timestamp_seconds",
  "Unix time the last poll cycle finished.",
  [TEAM_LABEL],
);
export const RUNNING_REPORTED = gauge(
  "platform_sandboxes_running_reported",
  "Running sandboxes as the platform counts them (X-Total-Running of the last walk's first page).",
  [TEAM_LABEL],
  { flavor: "e2b" },
);
export const WALK_RUNNING_DIFFERENCE = gauge(
  "exporter_walk_running_difference",
  "X-Total-Running minus the running sandboxes the last walk found; nonzero for long means paging lost or repeated sandboxes.",
  [TEAM_LABEL],
  { flavor: "e2b" },
);

/** The poller's own families of a snapshot. */
export const COLLECTOR_STATUS_FAMILIES = [
  COLLECT_DURATION,
  COLLECT_SUCCESS,
  LAST_SUCCESS,
  COLLECTOR_SUPPORTED,
  LIST_TRUNCATED,
  USAGE_IDS_SKIPPED,
  LAST_CYCLE,
  RUNNING_REPORTED,
  WALK_RUNNING_DIFFERENCE,
] as const;

/**
 * collect_duration/success, last success and last cycle families of a snapshot (collect_stale is
 * computed at scrape time, in SelfMetrics).
 */
export function collectorStatusFamilies(ns: string, s: Snapshot, sharded = false): Family[] {
  const duration = family(ns, COLLECT_DURATION);
  const success = family(ns, COLLECT_SUCCESS);
  const last = family(ns, LAST_SUCCESS);
  const supported = family(ns, COLLECTOR_SUPPORTED);
  const truncated = family(ns, LIST_TRUNCATED);
  for (const c of collectorStatuses(s)) {
    if (c.skipped) continue;
    for (const l of c.unsupported ? [] : (c.lists ?? []))
      truncated.add(labels([["list", l.list]]), l.truncated ? 1 : 0);
    const l = labels([["collector", c.name]]);
    supported.add(l, c.unsupported ? 0 : 1);
    if (c.unsupported) continue;
    duration.add(l, c.durationMs / 1000);
    success.add(l, c.success ? 1 : 0);
    if (c.lastSuccessAt !== undefined) last.add(l, c.lastSuccessAt / 1000);
  }
  const cross =
    s.totalRunning === undefined ? [] : runningCrossCheck(ns, s, s.totalRunning, sharded);
  const skipped = !s.usage ? [] : [family(ns, USAGE_IDS_SKIPPED).add("", s.usage.skippedIds ?? 0)];
  const cycle = family(ns, LAST_CYCLE).add("", s.finishedAt / 1000);
  return [duration, success, last, supported, truncated, ...cross, ...skipped, cycle];
}

/**
 * The platform's own count of running sandboxes (E2B's X-Total-Running) beside the walk's: a
 * difference that persists is a paging bug on one side or the other.
 */
function runningCrossCheck(ns: string, s: Snapshot, reported: number, sharded: boolean): Family[] {
  const total = family(ns, RUNNING_REPORTED).add("", reported);
  // A shard's walk keeps only its own sandboxes: there is nothing to compare the total with.
  if (sharded) return [total];
  let walked = 0;
  if (s.sandboxes)
    forEachRow(s.sandboxes, (_id, _template, state) => {
      if (state === "running") walked++;
    });
  return [total, family(ns, WALK_RUNNING_DIFFERENCE).add("", reported - walked)];
}
