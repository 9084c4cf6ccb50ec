// Team capacity (poll.teamMetrics, off by default): E2B's GET /teams/{teamID}/metrics for the
// latest point of the last few minutes every tick, and /teams/{teamID}/metrics/max for the maxima
// over poll.teamMetricsWindowMs, at most once a minute. Cluster-wide (shard 0). The team id is
// platform.teamId, else learned (from the lifecycle events); without one the read fails, named.
// A failed read of the maxima costs only the maxima: the latest point is kept, the maxima read
// before stay (marked `maxFailed`) and are asked again a minute later.
import type { TeamMetricPoint } from "../../platform/normalize/team-metrics.js";
import { ExporterError, errorSummary } from "../../util/errors.js";
import type { TickCollector } from "../collector.js";
import { TEAM_CAPACITY_FAMILIES, teamFamilies } from "./team-families.js";
import { teamMetricsSlice } from "./team-metrics-settings.js";

/** How far back the latest point is looked for: E2B records a point every 5 s. */
export const LATEST_WINDOW_MS = 5 * 60_000;
/** Least time between two reads of the maxima (two requests each). */
export const MAX_EVERY_MS = 60_000;

/** The team's capacity as its platform reports it. */
export interface TeamCapacity {
  teamId: string;
  /** Newest point of the last LATEST_WINDOW_MS; absent when the platform had none (unknown). */
  latest?: TeamMetricPoint;
  /** Highest values over `windowMs`, read at `readAt`; absent while the latest is unknown. */
  max?: { concurrentSandboxes: number; startRate: number; readAt: number; windowMs: number };
  /** The latest read of the maxima (at `at`) failed: `max`, if any, is an earlier read's. */
  maxFailed?: { at: number; windowMs: number; code: string; message: string };
}

declare module "../snapshot.js" {
  interface TickData {
    teamMetrics: TeamCapacity;
  }
}

/** No team id: neither platform.teamId nor a lifecycle event has named the team yet. */
export class TeamIdUnknownError extends ExporterError {
  constructor() {
    super(
      "ERR_TEAM_ID_UNKNOWN",
      "team id unknown: set platform.teamId (--team-id), or enable poll.events to learn it from the lifecycle events",
    );
  }
}

export const teamMetricsCollector: TickCollector<"teamMetrics", typeof teamMetricsSlice> = {
  name: "teamMetrics",
  optional: true,
  optIn: "teamMetrics",
  settings: teamMetricsSlice,
  // With poll.events, the events of this very tick may be the first to name the team.
  after: "events",
  runs: (where) => where.clusterWide,
  read: async ({ reader, clock, teamId, poll }, previous) => {
    const team = teamId?.();
    if (team === undefined || team === "") throw new TeamIdUnknownError();
    const now = clock.now();
    const points = await reader.teamMetrics(team, (now - LATEST_WINDOW_MS) / 1000, now / 1000);
    const latest = points.at(-1);
    // E2B answers a max of 0 when it has no data: only a team with points has a known maximum.
    if (latest === undefined) return { value: { teamId: team }, requests: 1 };
    const windowMs = poll.teamMetricsWindowMs;
    const same = previous?.teamId === team ? previous : undefined;
    const kept = same?.max?.windowMs === windowMs ? same.max : undefined;
    const failed = same?.maxFailed?.windowMs === windowMs ? same.maxFailed : undefined;
    const value: TeamCapacity = { teamId: team, latest };
    if (kept) value.max = atLeast(kept, latest);
    // A failed read waits its minute too: a broken max route costs two requests a minute.
    const triedAt = Math.max(kept?.readAt ?? -Infinity, failed?.at ?? -Infinity);
    if (now - triedAt < MAX_EVERY_MS) {
      if (failed) value.maxFailed = failed;
      return { value, requests: 1 };
    }
    const [startS, endS] = [(now - windowMs) / 1000, now / 1000];
    try {
      const [concurrent, rate] = await Promise.all([
        reader.teamMetricsMax(team, "concurrent_sandboxes", startS, endS),
        reader.teamMetricsMax(team, "sandbox_start_rate", startS, endS),
      ]);
      const max = {
        concurrentSandboxes: concurrent.value,
        startRate: rate.value,
        readAt: now,
        windowMs,
      };
      value.max = atLeast(max, latest);
    } catch (err) {
      value.maxFailed = { at: now, windowMs, ...errorSummary(err) };
    }
    return { value, requests: 3 };
  },
  families: teamFamilies,
  declares: TEAM_CAPACITY_FAMILIES,
};

/** The maxima raised to the latest point: a peak newer than the last read of the max counts. */
function atLeast(
  max: NonNullable<TeamCapacity["max"]>,
  latest: TeamMetricPoint,
): NonNullable<TeamCapacity["max"]> {
  return {
    ...max,
    concurrentSandboxes: Math.max(max.concurrentSandboxes, latest.concurrentSandboxes),
    startRate: Math.max(max.startRate, latest.startRate),
  };
}
