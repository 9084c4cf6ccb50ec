// A collector's status in a snapshot: success, staleness, timing and error of its latest outcome.
import type { Outcome } from "./collector.js";
import type { CollectorName, CollectorStatus } from "./snapshot.js";

/** Data not refreshed for this many of its intervals is stale. */
const STALE_INTERVALS = 2;

/** What the status depends on besides the outcome. */
export interface StatusContext {
  /** The platform does not serve the collector (see Capabilities). */
  unsupported: boolean;
  /** This instance reads the collector (cluster-wide ones run on shard 0 only). */
  runs: boolean;
  now: number;
  /** How often the collector is read: its data is stale once older than two of these. */
  everyMs: number;
}

/** The status of `name` at `c.now`, from its latest outcome and its previous status. */
export function collectorStatus(
  name: CollectorName,
  outcome: Outcome<unknown> | undefined,
  prev: CollectorStatus | undefined,
  c: StatusContext,
): CollectorStatus {
  const { now } = c;
  if (c.unsupported)
    return {
      name,
      success: false,
      stale: false,
      unsupported: true,
      lastAttemptAt: outcome?.startedAt ?? now,
      durationMs: outcome?.durationMs ?? 0,
      requests: outcome?.requests ?? 0,
      ...(outcome?.error ? { error: outcome.error } : {}),
    };
  if (!c.runs)
    return {
      name,
      success: false,
      stale: false,
      skipped: true,
      lastAttemptAt: now,
      durationMs: 0,
      requests: 0,
    };
  if (!outcome) {
    // Not answered yet (the first walk is still running): nothing held, so stale.
    return (
      prev ?? { name, success: false, stale: true, lastAttemptAt: now, durationMs: 0, requests: 0 }
    );
  }
  const lastSuccessAt = outcome.ok ? outcome.startedAt : prev?.lastSuccessAt;
  // Old data is stale whatever kept it from being refreshed: a failure, a hang, a backoff.
  const staleAfter =
    lastSuccessAt === undefined ? undefined : lastSuccessAt + STALE_INTERVALS * c.everyMs;
  const tooOld = staleAfter === undefined || now > staleAfter;
  return {
    name,
    success: outcome.ok,
    stale: !outcome.ok || tooOld,
    lastAttemptAt: outcome.startedAt,
    ...(lastSuccessAt !== undefined ? { lastSuccessAt } : {}),
    ...(staleAfter !== undefined ? { staleAfter } : {}),
    durationMs: outcome.durationMs,
    requests: outcome.requests,
    ...(outcome.error ? { error: outcome.error } : {}),
    ...(outcome.lists ? { lists: outcome.lists } : {}),
  };
}
