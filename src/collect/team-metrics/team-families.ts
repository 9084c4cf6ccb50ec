// Team capacity (the teamMetrics collector, poll.teamMetrics): the team's concurrent sandboxes and
// start rate, and their maxima over the window. Exported by shard 0 only. A value the platform did
// not give (it answered `[]`) is no series, never a 0. The limit is TeamLimitMetrics' (prom-client).
import { Family, labels } from "../../metrics/exposition/text.js";
import type { ValueGuard } from "../../metrics/exposition/value-guard.js";
import { formatDuration } from "../../util/duration.js";
import type { FamiliesContext, FamilyUpdater } from "../collector.js";
import type { TeamCapacity } from "./team-metrics.js";

const LATEST = "GET /teams/{teamID}/metrics";
const MAX = "GET /teams/{teamID}/metrics/max";

/** The collector's families: the updater renders each reading. */
export function teamFamilies({ ns }: FamiliesContext): FamilyUpdater<TeamCapacity> {
  return (team, { guard }) => teamCapacityFamilies(ns, team, guard);
}

/** The families of the collector's latest data. */
export function teamCapacityFamilies(ns: string, team: TeamCapacity, guard: ValueGuard): Family[] {
  const l = labels([["team", team.teamId]], guard);
  const cached = `Cached from the last successful poll of ${LATEST} (its newest point of the last 5 minutes).`;
  const concurrent = new Family(
    `${ns}_team_concurrent_sandboxes`,
    "gauge",
    `Sandboxes of the team running at once, as the platform counts them. ${cached}`,
  );
  const rate = new Family(
    `${ns}_team_sandbox_start_rate`,
    "gauge",
    `Sandboxes the team started per second, as the platform counts them. ${cached}`,
  );
  if (team.latest) {
    concurrent.add(l, team.latest.concurrentSandboxes);
    rate.add(l, team.latest.startRate);
  }
  const window = team.max ? formatDuration(team.max.windowMs) : "window";
  const fromMax = (metric: string) =>
    `From ${MAX}?metric=${metric} over the last ${window} (poll.teamMetricsWindowMs), read at most once a minute.`;
  const concurrentMax = new Family(
    `${ns}_team_concurrent_sandboxes_max`,
    "gauge",
    `Most sandboxes the team ran at once over the last ${window}. ${fromMax("concurrent_sandboxes")}`,
  );
  const rateMax = new Family(
    `${ns}_team_sandbox_start_rate_max`,
    "gauge",
    `Highest rate of sandbox starts of the team per second over the last ${window}. ${fromMax("sandbox_start_rate")}`,
  );
  if (team.max) {
    concurrentMax.add(l, team.max.concurrentSandboxes);
    rateMax.add(l, team.max.startRate);
  }
  const maxStale = new Family(
    `${ns}_team_metrics_max_stale`,
    "gauge",
    `1 when the latest read of ${MAX} failed: the _max series hold an earlier read's maxima (raised to the newest point), or none, and are asked again a minute later; 0 when it succeeded.`,
  );
  if (team.latest) maxStale.add(l, team.maxFailed ? 1 : 0);
  return [concurrent, rate, concurrentMax, rateMax, maxStale];
}
