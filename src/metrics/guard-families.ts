// The families the metrics layer writes itself, beside its parts': what the ValueGuard cut or left
// out of a snapshot's exposition, and the sandboxes the per-sandbox cap left without series.
import { family, gauge, setting, TEAM_LABEL } from "../exposition/descriptor.js";
import type { Family } from "../exposition/text.js";
import { RESOURCE_FIELDS, type ValueGuard } from "../exposition/value-guard.js";

export const LABEL_VALUES_TRUNCATED = gauge(
  "exporter_label_values_truncated",
  "Label values from the platform cut to maxLabelValueLength in the current exposition.",
  [TEAM_LABEL],
);
export const INVALID_VALUES = gauge(
  "exporter_invalid_values",
  "Negative cpu and memory values (and negative or NaN usage values) of this shard's sandboxes, left out of the sums, in the latest snapshot.",
  ["field", TEAM_LABEL],
);
export const SANDBOX_SERIES_DROPPED = gauge(
  "exporter_sandbox_series_dropped",
  "Sandboxes of this shard left without per-sandbox series by maxSandboxSeries.",
  [],
  { on: setting("metrics.perSandboxMetrics") },
);
/** The families the metrics layer writes itself (the rest are its parts'). */
export const EXPOSITION_FAMILIES = [
  LABEL_VALUES_TRUNCATED,
  INVALID_VALUES,
  SANDBOX_SERIES_DROPPED,
] as const;

/** What the guard cut or left out of this snapshot's exposition; usage fields when usage is shown. */
export function guardFamilies(ns: string, guard: ValueGuard, usage: boolean): Family[] {
  const truncated = family(ns, LABEL_VALUES_TRUNCATED).add("", guard.truncated);
  const negative = family(ns, INVALID_VALUES);
  for (const field of usage ? RESOURCE_FIELDS : (["cpu", "memory"] as const))
    negative.add(`{field="${field}"}`, guard.negative[field]);
  return [truncated, negative];
}

export function droppedFamily(ns: string, dropped: number): Family {
  return family(ns, SANDBOX_SERIES_DROPPED).add("", dropped);
}
