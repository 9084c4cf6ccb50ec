// The registry: every collector the poller runs. A new collector is one file and one line here.
import type { TickCollector } from "./collector.js";
import { eventsCollector } from "./events.js";
import { healthCollector } from "./health.js";
import { nodesCollector } from "./nodes.js";
import { overviewCollector } from "./overview.js";
import type { CollectorName } from "./snapshot.js";
import { teamMetricsCollector } from "./team-metrics.js";
import { templateBuildsCollector } from "./template-builds.js";
import { templatesCollector } from "./templates.js";

/** The collectors refreshed on every tick, in the order their series are exported. */
export const TICK_COLLECTORS: readonly TickCollector[] = [
  healthCollector,
  overviewCollector,
  nodesCollector,
  templatesCollector,
  templateBuildsCollector,
  eventsCollector,
  teamMetricsCollector,
];

/** Every collector of a snapshot: the tick collectors, the sandbox walk, then usage (opt-in). */
export const COLLECTORS: readonly CollectorName[] = [
  ...TICK_COLLECTORS.map((c) => c.name),
  "sandboxes",
  "usage",
];
