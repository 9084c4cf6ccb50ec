// The /status JSON document: what the last cycle did, per collector, and how old the data is.
import {
  type CollectorStatus,
  collectorStatuses,
  type Snapshot,
  staleAt,
} from "../collect/snapshot.js";
import { hasGoodData } from "./readiness.js";

/** Builds the /status body from the latest snapshot; `sections` carries optional parts (probe, policy). */
export function statusReport(
  snapshot: Snapshot | undefined,
  now: number,
  sections: Record<string, unknown> = {},
): Record<string, unknown> {
  if (!snapshot) return { ready: false, cycle: 0, collectors: {}, ...sections };
  const collectors: Record<string, unknown> = {};
  // The usage collector, when on, after the five of every snapshot.
  for (const c of collectorStatuses(snapshot)) {
    if (!c.skipped) collectors[c.name] = collectorEntry(c, now);
  }
  return {
    ready: hasGoodData(snapshot),
    // Poll cycles as poll_cycles_total counts them: a snapshot of a read between walks is none.
    cycle: snapshot.pollCycles ?? snapshot.cycle,
    cycleStarted: new Date(snapshot.startedAt).toISOString(),
    cycleDurationSeconds: (snapshot.finishedAt - snapshot.startedAt) / 1000,
    sandboxes: snapshot.sandboxes?.length ?? null,
    sandboxesComplete: snapshot.sandboxesComplete,
    collectors,
    ...sections,
  };
}

/**
 * One collector's entry. `state`: ok, failed, stale (old data, no failure yet) or unsupported (the
 * platform does not serve it: neither failed nor stale, its answer under `unsupportedAnswer`).
 * `truncated`: the lists its last read stopped short of the end, and why.
 */
function collectorEntry(c: CollectorStatus, now: number): Record<string, unknown> {
  const stale = staleAt(c, now);
  const lastAttempt = new Date(c.lastAttemptAt).toISOString();
  if (c.unsupported)
    return {
      state: "unsupported",
      success: null,
      stale: false,
      lastAttempt,
      unsupportedAnswer: c.error ?? null,
      error: null,
    };
  const truncated = (c.lists ?? []).flatMap((l) =>
    l.truncated ? [{ list: l.list, pages: l.pages, ...l.truncated }] : [],
  );
  return {
    state: !c.success ? "failed" : stale ? "stale" : "ok",
    success: c.success,
    stale,
    lastAttempt,
    lastSuccess: c.lastSuccessAt === undefined ? null : new Date(c.lastSuccessAt).toISOString(),
    dataAgeSeconds: c.lastSuccessAt === undefined ? null : (now - c.lastSuccessAt) / 1000,
    durationSeconds: c.durationMs / 1000,
    requests: c.requests,
    error: c.error ?? null,
    ...(truncated.length > 0 ? { truncated } : {}),
  };
}
