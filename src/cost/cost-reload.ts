// What a reload may change of the cost settings. Prices, the budget and the attribution cap apply
// from the reload on; turning cost on or off, the currency and the attribution keys take a
// restart, as the counters so far are in the old currency and by the old keys.
import { ExporterError } from "../util/errors.js";
import type { CostSettings } from "./cost-settings.js";

/** A reload changed a cost setting that takes a restart; nothing of the reload is applied. */
export class CostRestartError extends ExporterError {
  constructor(
    readonly setting: string,
    why: string,
  ) {
    super(
      "ERR_RELOAD_NEEDS_RESTART",
      `${setting} changed: ${why} takes a restart; the previous configuration is kept`,
    );
  }
}

/** Throws CostRestartError naming the first setting of `next` that a reload cannot apply. */
export function checkCostReload(now: CostSettings, next: CostSettings): void {
  if (next.enabled !== now.enabled) throw enabledChanged(next.enabled);
  if (next.currency !== now.currency)
    throw new CostRestartError(
      "cost.currency",
      `counting spend in ${next.currency} instead of ${now.currency}`,
    );
  if (next.attributeBy.join("\0") !== now.attributeBy.join("\0"))
    throw new CostRestartError("cost.attributeBy", "attributing spend by other metadata keys");
}

/** Cost accounting turned on (it was off at start) or off by a reload. */
export function enabledChanged(on: boolean): CostRestartError {
  return new CostRestartError(
    "cost.enabled",
    `turning cost accounting ${on ? "on" : "off"} (--cost, --no-cost, or prices given or removed)`,
  );
}
