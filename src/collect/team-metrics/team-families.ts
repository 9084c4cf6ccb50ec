// Team capacity (the teamMetrics collector, poll.teamMetrics): the team's concurrent sandboxes and
// start rate, and their maxima over the window. Exported by shard 0 only. A value the platform did
// not give (it answered `[]`) is no series, never a 0. The limit is TeamLimitMetrics' (prom-client).
import { family, gauge, setting } from "../../exposition/descriptor.js";
import { type Family, labels } from "../../exposition/text.js";
import type { ValueGuard } from "../../exposition/value-guard.js";
import { formatDuration } from "../../util/duration.js";
import type { FamiliesContext, FamilyUpdater } from "../collector.js";
import type { TeamCapacity } from "./team-metrics.js";

const LATEST = "GET /teams/{teamID}/metrics";
const MAX = "GET /teams/{teamID}/metrics/max";
const CACHED = `Cached from the last successful poll of ${LATEST} (its newest point of the last 5 minutes).`;
/** `{window}` is poll.teamMetricsWindowMs, as formatDuration writes it. */
const fromMax = (metric: string) =>
  `From ${MAX}?metric=${metric} over the last {window} (poll.teamMetricsWindowMs), read at most once a minute.`;
const WINDOW = { window: "1h" };

const ON = { on: setting("poll.teamMetrics"), flavor: "e2b" } as const;

export const TEAM_CONCURRENT = gauge(
  "team_concurrent_sandboxes",
  `Sandboxes of the team running at once, as the platform counts them. ${CACHED}`,
  ["team"],
  ON,
);
export const TEAM_START_RATE = gauge(
  "team_sandbox_start_rate",
  `Sandboxes the team started per second, as the platform counts them. ${CACHED}`,
  ["team"],
  ON,
);
export const TEAM_CONCURRENT_MAX = gauge(
  "team_concurrent_sandboxes_max",
  `Most sandboxes the team ran at once over the last {window}. ${fromMax("concurrent_sandboxes")}`,
  ["team"],
  { ...ON, vars: WINDOW },
);
export const TEAM_START_RATE_MAX = gauge(
  "team_sandbox_start_rate_max",
  `Highest rate of sandbox starts of the team per second over the last {window}. ${fromMax("sandbox_start_rate")}`,
  ["team"],
  { ...ON, vars: WINDOW },
);
export const TEAM_MAX_STALE = gauge(
  "team_metrics_max_stale",
  `1 when the latest read of ${MAX} failed: the _max series hold an earlier read's maxima (raised to the newest point), or none, and are asked again a minute later; 0 when it succeeded.`,
  ["team"],
  ON,
);
export const TEAM_CAPACITY_FAMILIES = [
  TEAM_CONCURRENT,
  TEAM_START_RATE,
  TEAM_CONCURRENT_MAX,
  TEAM_START_RATE_MAX,
  TEAM_MAX_STALE,
] as const;

/** The collector's families: the updater renders each reading. */
export function teamFamilies({ ns }: FamiliesContext): FamilyUpdater<TeamCapacity> {
  return (team, { guard }) => teamCapacityFamilies(ns, team, guard);
}

/** The families of the collector's latest data. */
export function teamCapacityFamilies(ns: string, team: TeamCapacity, guard: ValueGuard): Family[] {
  const l = labels([["team", team.teamId]], guard);
  const concurrent = family(ns, TEAM_CONCURRENT);
  const rate = family(ns, TEAM_START_RATE);
  if (team.latest) {
    concurrent.add(l, team.latest.concurrentSandboxes);
    rate.add(l, team.latest.startRate);
  }
  const window = { window: team.max ? formatDuration(team.max.windowMs) : "window" };
  const concurrentMax = family(ns, TEAM_CONCURRENT_MAX, window);
  const rateMax = family(ns, TEAM_START_RATE_MAX, window);
  if (team.max) {
    concurrentMax.add(l, team.max.concurrentSandboxes);
    rateMax.add(l, team.max.startRate);
  }
  const maxStale = family(ns, TEAM_MAX_STALE);
  if (team.latest) maxStale.add(l, team.maxFailed ? 1 : 0);
  return [concurrent, rate, concurrentMax, rateMax, maxStale];
}
