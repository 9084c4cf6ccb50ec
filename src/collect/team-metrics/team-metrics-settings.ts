// The team-metrics collector's settings (under `poll:`).
import { bool, duration } from "../../config/fields.js";
import type { SectionOf } from "../../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../../config/slice.js";

const X = ENV_PREFIX;

export const teamMetricsSlice = defineSlice({
  key: "poll",
  fields: {
    /** Read the team's capacity (E2B's GET /teams/{teamID}/metrics and /metrics/max) every tick. */
    teamMetrics: bool.default(false),
    /** Window of the team metrics' maxima (read at most once a minute). */
    teamMetricsWindowMs: duration().default(3_600_000),
  },
  settings: [
    {
      path: "poll.teamMetrics",
      env: `${X}POLL_TEAM_METRICS`,
      flag: "poll-team-metrics",
      kind: "bool",
      help: "team capacity: concurrent sandboxes and start rate (E2B's GET /teams/{teamID}/metrics), and their maxima",
      doc: "team capacity (shard 0): `GET /teams/{teamID}/metrics` every tick (newest point of the last 5 min), `/metrics/max` for both metrics at most once a minute",
    },
    {
      path: "poll.teamMetricsWindowMs",
      env: `${X}POLL_TEAM_METRICS_WINDOW`,
      flag: "poll-team-metrics-window",
      kind: "duration",
      help: "window of the team metrics' maxima (read at most once a minute)",
      doc: "window of the `_max` gauges (read at most once a minute)",
    },
  ],
});

declare module "../poll-settings.js" {
  interface PollSettings extends SectionOf<typeof teamMetricsSlice> {}
}
