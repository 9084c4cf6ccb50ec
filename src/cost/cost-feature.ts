// The face of cost: the feature, on with cost.enabled. It meters the walks, the lifecycle events
// (it subscribes to the ledger, whoever feeds it) and the policy's pauses (cost-accounting.ts).
import type { Feature } from "../feature.js";
import { startCost } from "./cost-accounting.js";
import { COST_FAMILIES } from "./cost-families.js";
import { enabledChanged } from "./cost-reload.js";

export const costFeature: Feature = {
  name: "cost",
  declares: COST_FAMILIES,
  // Spend, savings and the budget are the team's: each team is metered on its own.
  perTeam: "each",
  prepare(config) {
    if (!config.cost.enabled) return undefined;
    return {
      // Attribution by a metadata key reads the sandboxes' metadata.
      needs: { sandboxMetadata: config.cost.attributeBy.length > 0 },
      start(s, all) {
        const cost = startCost({
          // The services' own: several teams give each its budget (platform.teams[].dailyBudget).
          settings: s.config.cost,
          registry: s.metrics.registry,
          namespace: config.metrics.namespace,
          clock: s.clock,
          shard: config.shard,
          states: config.states,
          maxLabelValueLength: config.metrics.maxLabelValueLength,
          maxTemplates: config.metrics.maxEventTemplates,
          scrub: (text) => s.secrets.scrub(text),
          rules: all.rules,
          nonFinite: (family) => s.metrics.drops.dropNonFinite(family),
        });
        if (!cost) return {};
        // Events are accounted where they arrive; without the ledger the walks alone are metered.
        if (s.ledger) cost.follow(s.ledger);
        s.policyHooks.push(cost.policy);
        return {
          onSnapshot: (snapshot) => cost.onSnapshot(snapshot),
          // Prices, the budget and the cap apply; a change that takes a restart refuses the reload.
          reload: (next) => cost.reload(next.cost),
        };
      },
    };
  },
  onReloadWhileOff(next) {
    // Refused, not warned: a reload that answers "reloaded" must have applied what it read.
    if (next.cost.enabled) throw enabledChanged(true);
  },
};
