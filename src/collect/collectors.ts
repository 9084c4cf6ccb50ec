// The registry: every collector the poller runs. A new collector is one folder and one line here:
// it brings its own settings slice, opt-in, read and metric families.
import type { AnySlice } from "../config/slice.js";
import type { TickCollector } from "./collector.js";
import { eventsCollector } from "./events.js";
import { healthCollector } from "./health.js";
import { nodesCollector } from "./nodes.js";
import { overviewCollector } from "./overview.js";
import type { CollectorName } from "./snapshot.js";
import { storageCollector } from "./storage/storage.js";
import { teamMetricsCollector } from "./team-metrics/team-metrics.js";
import { templateBuildsCollector } from "./template-builds/template-builds.js";
import { templatesCollector } from "./templates/templates.js";

/** The collectors refreshed on every tick, in the order their series are exported. */
const REGISTRY = [
  healthCollector,
  overviewCollector,
  nodesCollector,
  templatesCollector,
  templateBuildsCollector,
  eventsCollector,
  teamMetricsCollector,
  storageCollector,
] as const;

/** The collectors refreshed on every tick, in the order their series are exported. */
export const TICK_COLLECTORS: readonly TickCollector[] = REGISTRY;

/** A collector's own settings slice; never for one that declares none (its type says any slice). */
type OwnSlice<C> = C extends { readonly settings?: infer S extends AnySlice }
  ? 0 extends 1 & S["fields"]
    ? never
    : S
  : never;

/** The settings slice of one of the registered collectors (fields under `poll`). */
export type CollectorSlice = OwnSlice<(typeof REGISTRY)[number]>;

/** The registered collectors' settings slices, in the registry's order (config composes them). */
export const COLLECTOR_SLICES: readonly CollectorSlice[] = REGISTRY.flatMap((c) =>
  c.settings === undefined ? [] : [c.settings],
);

/** Every collector of a snapshot: the tick collectors, the sandbox walk, then usage (opt-in). */
export const COLLECTORS: readonly CollectorName[] = [
  ...TICK_COLLECTORS.map((c) => c.name),
  "sandboxes",
  "usage",
];
