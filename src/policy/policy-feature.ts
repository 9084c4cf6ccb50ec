// The policy engine as a feature: on with policy.enabled. Its rule file is read before anything
// starts (a bad one stops the start, naming the rule and field) and again at each reload; it acts
// on walks in its own loop, so the poll never waits for it.
import { Agent } from "undici";
import type { Feature, PolicyHooks } from "../feature.js";
import { PolicyEngine } from "./engine.js";
import { loadPolicySpec, PolicyFileError } from "./policy-file.js";
import { PolicyLoop } from "./policy-loop.js";
import { POLICY_FAMILIES } from "./policy-metrics.js";
import { forTeam, type PolicySpec, policySpec, readsStorage } from "./policy-settings.js";

/**
 * A retention rule reads the snapshot list, which the poll reads from its start only: a reload
 * that adds the first one to an exporter started without it is refused, naming the rule.
 */
function retentionNeedsStorage(spec: PolicySpec, storage: boolean, file: string): void {
  const rule = spec.snapshotRules[0];
  if (rule === undefined || storage) return;
  throw new PolicyFileError(file, [
    `rule "${rule.name}": target snapshot reads the snapshot list, which this exporter started without: set poll.storage: true (or start with the rule) and restart`,
  ]);
}

declare module "../feature.js" {
  interface Exposed {
    /** The policy engine (policy.enabled). */
    policy: PolicyEngine;
  }
}

export const policyFeature: Feature = {
  name: "policy",
  declares: POLICY_FAMILIES,
  // Several teams: an engine per team, its caps, share limit and audit the team's own.
  perTeam: "each",
  prepare(config, effects) {
    if (!config.policy.enabled) return undefined;
    const spec = loadPolicySpec(config.policy, effects.readFile);
    // Retention rules read the snapshot list: the poll reads it for them (poll.storage or not).
    const storage = readsStorage(config.poll, spec);
    return {
      // The rules read metadata, and health gives every shard the freshness check's start.
      needs: { sandboxMetadata: true, health: true, storage },
      rules: spec.rules.map((r) => ({ name: r.name, dryRun: r.dryRun })),
      start(s) {
        const w = config.policy.webhook;
        const agent = w ? new Agent() : undefined;
        const header = s.secretValues.policyWebhookHeader;
        // Each pause is told to every feature that follows them (cost), in the order they started.
        const hooks: PolicyHooks = {
          onApplied: (d, result, at) => {
            for (const h of s.policyHooks) h.onApplied(d, result, at);
          },
          onPlan: (at, decisions) => {
            for (const h of s.policyHooks) h.onPlan(at, decisions);
          },
        };
        // A rule naming teams (match.teams) runs in those teams only.
        const team = s.facts.teamId();
        const policy = new PolicyEngine({
          spec: forTeam(spec, team),
          platform: s.control.withOwnNormalizer("policy"),
          clock: s.clock,
          logger: s.logger,
          registry: s.metrics.registry,
          namespace: config.metrics.namespace,
          states: config.states,
          defaultRunTimeMs: s.pollIntervalMs,
          ...(w && agent
            ? {
                webhook: {
                  url: w.url,
                  ...(header ? { header: { name: w.headerName, value: header } } : {}),
                  timeoutMs: w.timeoutMs,
                  retries: w.retries,
                  dispatcher: agent,
                  // Failed deliveries are logged; the body is scrubbed of every secret first.
                  logger: s.logger.child({ component: "webhook" }),
                  secrets: s.secrets,
                },
              }
            : {}),
          // Read at each call: a feature that starts later may still follow the pauses.
          hooks,
        });
        // Paused events start the pausedFor clocks (from whichever feature feeds the ledger).
        s.ledger?.onFresh((e) => policy.onEvent(e));
        const loop = new PolicyLoop(
          (snapshot) => policy.run(snapshot),
          (err) => s.logger.error({ err }, "policy run failed"),
        );
        return {
          exposes: { policy },
          idle: () => loop.idle(),
          status: () => policy.status(),
          // A snapshot repeating the last walk's list brings the policy nothing new.
          onSnapshot(snapshot) {
            if (snapshot.walked) loop.offer(snapshot);
          },
          reload(next) {
            if (!next.policy.enabled)
              return () => {
                // The emergency stop: no rules from now on (the engine goes at the next restart).
                policy.setSpec({ ...policySpec(next.policy), rules: [] });
                s.logger.warn("policy disabled by reload: no rule runs until it is enabled again");
              };
            const nextSpec = loadPolicySpec(next.policy, s.readFile);
            retentionNeedsStorage(nextSpec, storage, next.policy.file ?? "(policy.rules)");
            return () => policy.setSpec(forTeam(nextSpec, team));
          },
          async stop() {
            await loop.idle();
            // Deliveries still queued or hanging are given up: a webhook must not hold the shutdown.
            await agent?.destroy();
          },
        };
      },
    };
  },
  onReloadWhileOff(next, logger) {
    if (next.policy.enabled)
      logger.warn("turning the policy engine on takes a restart; the new rules are not applied");
  },
};
