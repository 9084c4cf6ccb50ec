// The poller's own health per collector, from the snapshot (data age is computed at scrape time).
import { forEachRow } from "../collect/sandbox-table.js";
import { collectorStatuses, type Snapshot } from "../collect/snapshot.js";
import { Family, labels } from "./exposition/text.js";

/**
 * collect_duration/success, last success and last cycle families of a snapshot (collect_stale is
 * computed at scrape time, in SelfMetrics).
 */
export function collectorStatusFamilies(ns: string, s: Snapshot, sharded = false): Family[] {
  const duration = new Family(
    `${ns}_exporter_collect_duration_seconds`,
    "gauge",
    "Duration of the collector's requests in the last poll cycle.",
  );
  const success = new Family(
    `${ns}_exporter_collect_success`,
    "gauge",
    "1 when the collector succeeded in the last poll cycle, else 0.",
  );
  const last = new Family(
    `${ns}_exporter_last_success_timestamp_seconds`,
    "gauge",
    "Unix time the collector last succeeded.",
  );
  const supported = new Family(
    `${ns}_exporter_collector_supported`,
    "gauge",
    "1 when the platform serves the collector's endpoint; 0 when it answered 404, 405 or 403 before any success (re-checked every poll.capabilityRecheck). An unsupported collector exports no success or stale series.",
  );
  const truncated = new Family(
    `${ns}_exporter_list_truncated`,
    "gauge",
    "1 when the last read of a paged inventory list (GET /snapshots, /volumes, /v2/templates) stopped short of its end: at its page or time limit per tick (poll.listPagesPerTick, poll.listMaxMs; the next tick reads on) or on bad paging (a loop). What was read is published; see /status for why.",
  );
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
  const skipped = !s.usage
    ? []
    : [
        new Family(
          `${ns}_exporter_usage_ids_skipped`,
          "gauge",
          "Sandboxes left out of the last usage read (GET /sandboxes/metrics) because their id alone is too long for a request line.",
        ).add("", s.usage.skippedIds ?? 0),
      ];
  const cycle = new Family(
    `${ns}_exporter_last_cycle_timestamp_seconds`,
    "gauge",
    "Unix time the last poll cycle finished.",
  ).add("", s.finishedAt / 1000);
  return [duration, success, last, supported, truncated, ...cross, ...skipped, cycle];
}

/**
 * The platform's own count of running sandboxes (E2B's X-Total-Running) beside the walk's: a
 * difference that persists is a paging bug on one side or the other.
 */
function runningCrossCheck(ns: string, s: Snapshot, reported: number, sharded: boolean): Family[] {
  const total = new Family(
    `${ns}_platform_sandboxes_running_reported`,
    "gauge",
    "Running sandboxes as the platform counts them (X-Total-Running of the last walk's first page).",
  ).add("", reported);
  // A shard's walk keeps only its own sandboxes: there is nothing to compare the total with.
  if (sharded) return [total];
  let walked = 0;
  if (s.sandboxes)
    forEachRow(s.sandboxes, (_id, _template, state) => {
      if (state === "running") walked++;
    });
  return [
    total,
    new Family(
      `${ns}_exporter_walk_running_difference`,
      "gauge",
      "X-Total-Running minus the running sandboxes the last walk found; nonzero for long means paging lost or repeated sandboxes.",
    ).add("", reported - walked),
  ];
}
