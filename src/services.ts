// The services every feature shares, built once before any feature starts: the secrets and their
// scrubber, the registry and the poll's families, one request budget, the management API client
// and the platform facts learned as the exporter runs.
import type { Snapshot } from "./collect/snapshot.js";
import { readSecretFiles, type SecretValues, secretList } from "./config/secret-files.js";
import type { Config } from "./config/settings.js";
import type { Effects, Needs, Services } from "./feature.js";
import { ExporterMetrics } from "./metrics/exporter-metrics.js";
import { registerLimiterMetrics } from "./metrics/limiter-metrics.js";
import { TeamLimitMetrics } from "./metrics/team-limit-metrics.js";
import { ControlClient } from "./platform/control/control.js";
import { RequestLimiter } from "./platform/control/limiter.js";
import { PlatformFacts } from "./platform/facts.js";
import { asksForCredentials, type ListenerSecurity, listenerSecurity } from "./server/listener.js";
import { tickInterval } from "./util/schedule.js";
import type { Secrets } from "./util/secrets.js";
import { VERSION } from "./version.js";

/** How long past the events look-back an event id is remembered (webhook retries, late reads). */
const EVENT_ID_MARGIN_MS = 3_600_000;

/** The shared services, and how the listener is secured (for the listener alone). */
export interface RootServices extends Services {
  readonly security: ListenerSecurity;
}

/**
 * Builds the shared services of `config` for the features that are on (`needs`, merged over them);
 * `latest` reads the poll's newest snapshot.
 */
export function startServices(
  config: Config,
  effects: Effects,
  secrets: Secrets,
  latest: () => Snapshot | undefined,
  needs: Needs,
): RootServices {
  const { logger, clock } = effects;
  secrets.add(config.platform.apiKey);
  // The listener's security first (web config file, or the deprecated settings and their
  // bearer token), then every other secret file.
  const listener = listenerSecurity(config, logger.child({ component: "server" }));
  const secretValues: SecretValues = {
    ...readSecretFiles(config, ["adminToken", "policyWebhookHeader", "e2bWebhookSecret"]),
    ...(listener.auth?.bearerToken ? { bearerToken: listener.auth.bearerToken } : {}),
  };
  for (const value of secretList(secretValues)) secrets.add(value);
  const facts = new PlatformFacts({
    teamId: config.platform.teamId,
    teamConcurrencyLimit: config.platform.teamConcurrencyLimit,
  });
  const metrics = new ExporterMetrics({
    namespace: config.metrics.namespace,
    collectors: effects.collectors,
    perSandboxMetrics: config.metrics.perSandboxMetrics,
    metadataLabels: config.metrics.metadataLabels,
    maxSandboxSeries: config.metrics.maxSandboxSeries,
    maxLabelValueLength: config.metrics.maxLabelValueLength,
    shard: config.shard,
    runningStates: config.states.running,
    pausedStates: config.states.paused,
    clock,
    version: VERSION,
    logger: logger.child({ component: "metrics" }),
    scrub: (text) => secrets.scrub(text),
    // The event ledger remembers ids past the look-back, so a re-read event counts once. Only
    // where events arrive: every shard's collector reads them (keeping its own sandboxes'), and a
    // feature that declared it needs the ledger (the webhook).
    ...(config.poll.events || needs.ledger === true
      ? {
          lifecycleEvents: {
            horizonMs: config.poll.eventsLookbackMs + EVENT_ID_MARGIN_MS,
            maxTemplates: config.metrics.maxEventTemplates,
            facts,
          },
        }
      : {}),
  });
  // One request budget for poll, probes and policy together, served in that order.
  const limiter: RequestLimiter = new RequestLimiter({
    ratePerSecond: config.platform.maxRequestsPerSecond,
    burst: config.platform.requestBurst,
    now: () => performance.now(),
    onGrant: (caller, waitedMs) => limiterMetrics.granted(caller, waitedMs),
  });
  const limiterMetrics = registerLimiterMetrics(metrics.registry, config.metrics.namespace, (c) =>
    limiter.waiting(c),
  );
  // Refused creates by reason, and the team's concurrency limit (set, or named by a 429).
  const teamLimits = new TeamLimitMetrics({
    registry: metrics.registry,
    ns: config.metrics.namespace,
    facts,
    logger: logger.child({ component: "metrics" }),
  });
  const control = new ControlClient({
    apiUrl: config.platform.apiUrl,
    apiKey: config.platform.apiKey,
    authStyle: config.platform.authStyle,
    authHeader: config.platform.authHeader,
    timeoutMs: config.platform.timeoutMs,
    retries: config.platform.retries,
    envProxy: config.platform.envProxy,
    fieldMap: config.fieldMap,
    clock,
    onRequest: (info) => metrics.observeRequest(info),
    onBadBody: (endpoint, method) => metrics.badBody(endpoint, method),
    limiter,
    maxRetryAfterMs: config.platform.maxRetryAfterMs,
    apiPrefix: config.platform.apiPrefix,
    flavor: config.platform.flavor,
    onCreateRejected: (reason, limit, ignored) => teamLimits.createRejected(reason, limit, ignored),
    ...(secretValues.adminToken ? { adminToken: secretValues.adminToken } : {}),
    secrets,
    ...(effects.dispatcher ? { dispatcher: effects.dispatcher } : {}),
  });
  return {
    ...effects,
    config,
    secrets,
    secretValues,
    metrics,
    control,
    facts,
    listener: { asksForCredentials: asksForCredentials(listener) },
    security: listener,
    pollIntervalMs: tickInterval(config.poll.schedule),
    ledger: metrics.events,
    policyHooks: [],
    latest,
  };
}

/** What the poll must read for `needs`, merged over every feature that is on. */
export function mergeNeeds(all: readonly (Needs | undefined)[]): Needs {
  return {
    sandboxMetadata: all.some((n) => n?.sandboxMetadata === true),
    health: all.some((n) => n?.health === true),
    ledger: all.some((n) => n?.ledger === true),
    storage: all.some((n) => n?.storage === true),
  };
}
