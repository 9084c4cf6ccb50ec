// The one configuration schema, composed of the features' settings slices (each declares its
// fields, defaults and validation beside its code). Each schema's error text is the "expected ..."
// phrase of a ConfigProblem.
import { z } from "zod";
import { COLLECTOR_SLICES } from "../collect/collectors.js";
import { pollSlice } from "../collect/poll-settings.js";
import { costSlice, settleCost } from "../cost/cost-settings.js";
import { metricsSlice } from "../metrics/metrics-settings.js";
import { FLAVORS, platformSlice } from "../platform/platform-settings.js";
import { PolicySectionSchema, policySlice } from "../policy/policy-settings.js";
import { ProbeSchema, probeSlice } from "../probe/probe-settings.js";
import { serverSlice } from "../server/server-settings.js";
import { webhooksSlice } from "../server/webhook-settings.js";
import { fieldMapSlice, logSlice, shardSlice, statesSlice } from "./shared-settings.js";
import { type AnySlice, composeSection } from "./slice.js";

export { FLAVORS } from "../platform/platform-settings.js";
export { DEPRECATED_LISTENER } from "../server/server-settings.js";
export { DEFAULT_STATES } from "./shared-settings.js";

/** Every slice, in --help order: SETTINGS is their rows one after the other. */
export const SLICES: readonly AnySlice[] = [
  platformSlice,
  serverSlice,
  pollSlice,
  // Each registered collector's own (collect/collectors.ts): a new collector needs no line here.
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

/** The validated configuration every other module receives (defaults filled in). */
export type Config = z.infer<typeof ConfigSchema>;
