// The /status JSON document: what the last cycle did, per collector, and how old the data is.
import { collectorStatuses, type Snapshot, staleAt } from "../collect/snapshot.js";
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
    if (c.skipped) continue;
    collectors[c.name] = {
      success: c.success,
      stale: staleAt(c, now),
      lastAttempt: new Date(c.lastAttemptAt).toISOString(),
      lastSuccess: c.lastSuccessAt === undefined ? null : new Date(c.lastSuccessAt).toISOString(),
      dataAgeSeconds: c.lastSuccessAt === undefined ? null : (now - c.lastSuccessAt) / 1000,
      durationSeconds: c.durationMs / 1000,
      requests: c.requests,
      error: c.error ?? null,
    };
  }
  return {
    ready: hasGoodData(snapshot),
    cycle: snapshot.cycle,
    cycleStarted: new Date(snapshot.startedAt).toISOString(),
    cycleDurationSeconds: (snapshot.finishedAt - snapshot.startedAt) / 1000,
    sandboxes: snapshot.sandboxes?.length ?? null,
    sandboxesComplete: snapshot.sandboxesComplete,
    collectors,
    ...sections,
  };
}
