// The catalog, at the top of the layers: every tick collector and every feature the exporter has,
// and the one configuration schema composed of their settings slices (each declares its fields,
// defaults and validation beside its code). Nothing below imports it: the poller, the metrics and
// the loader are handed these lists (kube-state-metrics' builder holds its stores the same way).
import { z } from "zod";
import type { TickCollector } from "./collect/collector.js";
import { eventsCollector } from "./collect/events.js";
import { healthCollector } from "./collect/health.js";
import { nodesCollector } from "./collect/nodes.js";
import { overviewCollector } from "./collect/overview.js";
import { pollSlice } from "./collect/poll-settings.js";
import type { CollectorName } from "./collect/snapshot.js";
import { storageCollector } from "./collect/storage/storage.js";
import { teamMetricsCollector } from "./collect/team-metrics/team-metrics.js";
import { templateBuildsCollector } from "./collect/template-builds/template-builds.js";
import { templatesCollector } from "./collect/templates/templates.js";
import { helpText as helpFor } from "./config/help.js";
import { type ConfigInput, type LoadedConfig, loadSettings } from "./config/load.js";
import type { Config, Setting, SettingsCatalog } from "./config/settings.js";
import { fieldMapSlice, logSlice, shardSlice, statesSlice } from "./config/shared-settings.js";
import { type AnySlice, composeSection } from "./config/slice.js";
import { costFeature } from "./cost/cost-feature.js";
import { costSlice, settleCost } from "./cost/cost-settings.js";
import type { FamilyDescriptor } from "./exposition/descriptor.js";
import { DROP_FAMILIES } from "./exposition/registry-families.js";
import type { Feature } from "./feature.js";
import { CHURN_FAMILIES } from "./metrics/churn.js";
import { COLLECTOR_STATUS_FAMILIES } from "./metrics/collector-status-families.js";
import { EXPOSITION_FAMILIES } from "./metrics/guard-families.js";
import { LIFECYCLE_EVENT_FAMILIES } from "./metrics/lifecycle-events.js";
import { LIMITER_FAMILIES } from "./metrics/limiter-metrics.js";
import { metricsSlice } from "./metrics/metrics-settings.js";
import { PER_SANDBOX_FAMILIES } from "./metrics/per-sandbox.js";
import { PROCESS_FAMILIES } from "./metrics/process-metrics.js";
import { AGGREGATE_FAMILIES } from "./metrics/sandbox-aggregates.js";
import { SELF_FAMILIES } from "./metrics/self-metrics.js";
import { TEAM_INFO } from "./metrics/team-info-family.js";
import { TEAM_LIMIT_FAMILIES } from "./metrics/team-limit-metrics.js";
import { FLAVORS, platformSlice } from "./platform/platform-settings.js";
import { policyFeature } from "./policy/policy-feature.js";
import { PolicySectionSchema, policySlice } from "./policy/policy-settings.js";
import { probeFeature } from "./probe/probe-feature.js";
import { ProbeSchema, probeSlice } from "./probe/probe-settings.js";
import { e2bWebhookFeature } from "./server/e2b-webhook-feature.js";
import { serverSlice } from "./server/server-settings.js";
import { webhooksSlice } from "./server/webhook-settings.js";

/**
 * The collectors refreshed on every tick, in the order their series are exported. A new collector
 * is one folder and one line here: it brings its own settings slice, opt-in, read and families.
 */
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

/** The registered collectors' settings slices, in the registry's order (composed into `poll`). */
export const COLLECTOR_SLICES: readonly CollectorSlice[] = REGISTRY.flatMap((c) =>
  c.settings === undefined ? [] : [c.settings],
);

/** Every collector of a snapshot: the tick collectors, the sandbox walk, then usage (opt-in). */
export const COLLECTORS: readonly CollectorName[] = [
  ...TICK_COLLECTORS.map((c) => c.name),
  "sandboxes",
  "usage",
];

/**
 * The features, in the order they start, see each snapshot and show on /status and the landing
 * page. What one needs of another is declared (Needs) or subscribed to (the ledger's fresh events,
 * the policy's hooks), so the order changes nothing else. A new feature is one line here.
 */
export const FEATURES: readonly Feature[] = [
  costFeature,
  probeFeature,
  policyFeature,
  e2bWebhookFeature,
];

/**
 * Every metric family the exporter can write, as its module declares it: the metrics layer's, then
 * what each collector and each feature declares (`declares`), so a new one needs no line here.
 * `npm run docs:metrics` writes the reference from this list.
 */
export const METRIC_FAMILIES: readonly FamilyDescriptor[] = [
  ...PROCESS_FAMILIES,
  ...SELF_FAMILIES,
  ...DROP_FAMILIES,
  ...LIMITER_FAMILIES,
  ...TEAM_LIMIT_FAMILIES,
  ...COLLECTOR_STATUS_FAMILIES,
  ...EXPOSITION_FAMILIES,
  ...AGGREGATE_FAMILIES,
  ...CHURN_FAMILIES,
  ...PER_SANDBOX_FAMILIES,
  ...LIFECYCLE_EVENT_FAMILIES,
  TEAM_INFO,
  ...TICK_COLLECTORS.flatMap((c) => c.declares ?? []),
  ...FEATURES.flatMap((f) => f.declares ?? []),
];

/** Every slice, in --help order: SETTINGS is their rows one after the other. */
export const SLICES: readonly AnySlice[] = [
  platformSlice,
  serverSlice,
  pollSlice,
  // Each registered collector's own (REGISTRY above): a new collector needs no line here.
  ...COLLECTOR_SLICES,
  metricsSlice,
  shardSlice,
  fieldMapSlice,
  statesSlice,
  probeSlice,
  policySlice,
  webhooksSlice,
  costSlice,
  logSlice,
];

/** The whole configuration; parsing `{}` gives every default. */
export const ConfigSchema = z
  .strictObject({
    platform: composeSection(platformSlice).prefault({}),
    server: composeSection(serverSlice).prefault({}),
    poll: composeSection(pollSlice, ...COLLECTOR_SLICES).prefault({}),
    metrics: composeSection(metricsSlice).prefault({}),
    shard: composeSection(shardSlice).prefault({}),
    fieldMap: composeSection(fieldMapSlice).prefault({}),
    states: composeSection(statesSlice).prefault({}),
    probe: ProbeSchema.prefault({}),
    policy: PolicySectionSchema.prefault({}),
    webhooks: composeSection(webhooksSlice).prefault({}),
    log: composeSection(logSlice).prefault({}),
    cost: composeSection(costSlice).prefault({}),
  })
  .transform((c, ctx) => {
    // The flavor's presets, where no setting said otherwise.
    const f = FLAVORS[c.platform.flavor];
    return {
      ...c,
      platform: { ...c.platform, apiPrefix: c.platform.apiPrefix ?? f.apiPrefix },
      poll: { ...c.poll, pageLimit: Math.min(c.poll.pageLimit, f.maxPageLimit) },
      cost: settleCost(c.cost, c.platform.flavor, (i) =>
        ctx.addIssue({ code: "custom", path: i.path, message: i.message, input: c.cost }),
      ),
    };
  });

/** True when A and B are each assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/**
 * `Config` (config/settings.ts) is what the slice files declare by module augmentation; this line
 * fails to compile when it and what the schema parses part ways.
 */
const configIsParsed: Same<Config, z.output<typeof ConfigSchema>> = true;
void configIsParsed;

/** Every setting reachable from the environment or a flag, in --help order. */
export const SETTINGS: readonly Setting[] = SLICES.flatMap((s) => s.settings);

/** What the loader, the flag parser and --help read: the schema, the rows, the flavors. */
export const CATALOG: SettingsCatalog = {
  schema: ConfigSchema,
  settings: SETTINGS,
  flavors: Object.keys(FLAVORS),
};

/** Loads and validates the configuration; throws ConfigError listing every problem found. */
export function loadConfig(input: ConfigInput): LoadedConfig {
  return loadSettings(CATALOG, input);
}

/** The --help text: every flag with its environment variable, description and default. */
export function helpText(): string {
  return helpFor(CATALOG);
}
