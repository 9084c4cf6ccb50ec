// The services every feature shares, built once before any feature starts: the secrets and their
// scrubber, the registry and the poll's families, one request budget, the management API client
// and the platform facts learned as the exporter runs.
import type { Dispatcher } from "undici";
import type { Snapshot } from "./collect/snapshot.js";
import { readSecretFiles, type SecretValues, secretList } from "./config/secret-files.js";
import type { Config } from "./config/settings.js";
import type { Effects, Needs, Services } from "./feature.js";
import { ExporterMetrics } from "./metrics/exporter-metrics.js";
import { registerLimiterMetrics } from "./metrics/limiter-metrics.js";
import { TeamLimitMetrics } from "./metrics/team-limit-metrics.js";
import { ControlClient } from "./platform/control/control.js";
import { type RequestBudget, RequestLimiter } from "./platform/control/limiter.js";
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
  /** The one request budget (several teams each take a lane of it). */
  readonly limiter: RequestLimiter;
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
  /**
   * Several teams: the first one listed, whose credentials read the cluster (health, nodes,
   * overview); without one (teams discovered only), the admin token reads it.
   */
  teams?: { first: Team | undefined },
): RootServices {
  const severalTeams = teams !== undefined;
  const firstTeam = teams?.first;
  const { logger } = effects;
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
  // Several teams: the exporter's part reads the cluster; each team's ledger is its own.
  const metrics = exporterMetrics(config, effects, secrets, facts, needs, {
    collectors: effects.collectors,
    ...(severalTeams ? { ledger: false } : {}),
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
  // Refused creates by reason, and the team's concurrency limit (set, or named by a 429); several
  // teams: each team's own, not the exporter's.
  const teamLimits = severalTeams
    ? undefined
    : new TeamLimitMetrics({
        registry: metrics.registry,
        ns: config.metrics.namespace,
        facts,
        logger: logger.child({ component: "metrics" }),
      });
  const control = controlClient(config, effects, {
    secrets,
    metrics,
    limiter,
    ...(teamLimits ? { teamLimits } : {}),
    ...(secretValues.adminToken ? { adminToken: secretValues.adminToken } : {}),
    ...(firstTeam ? { team: asTeam(firstTeam) } : {}),
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
    limiter,
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

/** What the metrics of one part are (several teams: a team's, or the cluster's); default the whole. */
export interface MetricsPart {
  /** The tick collectors whose families it renders. */
  collectors: Effects["collectors"];
  /** A team's part: the process's own families are left to the exporter's part. */
  teamPart?: boolean;
  /** Whether it holds an event ledger (default: poll.events or a feature's needs). */
  ledger?: boolean;
}

/** The registry and the poll's families of `config` (of one part of it, with several teams). */
export function exporterMetrics(
  config: Config,
  effects: Effects,
  secrets: Secrets,
  facts: PlatformFacts,
  needs: Needs,
  part: MetricsPart = { collectors: effects.collectors },
): ExporterMetrics {
  const { logger, clock } = effects;
  const ledger = part.ledger ?? (config.poll.events || needs.ledger === true);
  return new ExporterMetrics({
    namespace: config.metrics.namespace,
    collectors: part.collectors,
    ...(part.teamPart ? { teamPart: true } : {}),
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
    ...(ledger
      ? {
          lifecycleEvents: {
            horizonMs: config.poll.eventsLookbackMs + EVENT_ID_MARGIN_MS,
            maxTemplates: config.metrics.maxEventTemplates,
            facts,
          },
        }
      : {}),
  });
}

/** One watched team, its key read. */
export interface Team {
  readonly id: string;
  /** For sandbox_team_info and /status; the id alone labels the series. */
  readonly name?: string;
  /** Its API key (E2B's cloud); absent: read with the admin token and X-Team-ID. */
  readonly apiKey?: string;
  /** Its daily spend budget; absent: cost.budget.daily. */
  readonly dailyBudget?: number;
}

/** How a control client reads as `team`: its key, or the admin token and X-Team-ID. */
export function asTeam(team: Team): NonNullable<ControlParts["team"]> {
  return {
    id: team.id,
    ...(team.apiKey ? { apiKey: team.apiKey } : {}),
    viaAdminToken: team.apiKey === undefined,
  };
}

/** What a control client reports to and draws from. */
export interface ControlParts {
  secrets: Secrets;
  /** Where its requests are counted (the request histogram and errors). */
  metrics: ExporterMetrics;
  limiter: RequestBudget;
  /** Where a refused create's limit goes; absent: nowhere (the cluster's reads create nothing). */
  teamLimits?: TeamLimitMetrics;
  adminToken?: string;
  /** Several teams: the team it reads as, with its key (cloud) or the admin token (self-hosted). */
  team?: { id: string; apiKey?: string; viaAdminToken: boolean };
  /** A dispatcher the caller owns and closes (several teams share one). */
  dispatcher?: Dispatcher;
}

/** The management API client of `config`, reporting to `parts.metrics`. */
export function controlClient(
  config: Config,
  effects: Effects,
  parts: ControlParts,
): ControlClient {
  const { clock } = effects;
  const { metrics, teamLimits, team } = parts;
  const dispatcher = parts.dispatcher ?? effects.dispatcher;
  return new ControlClient({
    apiUrl: config.platform.apiUrl,
    apiKey: team ? (team.apiKey ?? "") : config.platform.apiKey,
    authStyle: config.platform.authStyle,
    authHeader: config.platform.authHeader,
    timeoutMs: config.platform.timeoutMs,
    retries: config.platform.retries,
    envProxy: config.platform.envProxy,
    fieldMap: config.fieldMap,
    clock,
    onRequest: (info) => metrics.observeRequest(info),
    onBadBody: (endpoint, method) => metrics.badBody(endpoint, method),
    limiter: parts.limiter,
    maxRetryAfterMs: config.platform.maxRetryAfterMs,
    apiPrefix: config.platform.apiPrefix,
    flavor: config.platform.flavor,
    onCreateRejected: (reason, limit, ignored) =>
      teamLimits?.createRejected(reason, limit, ignored),
    ...(parts.adminToken ? { adminToken: parts.adminToken } : {}),
    ...(team ? { team: { id: team.id, viaAdminToken: team.viaAdminToken } } : {}),
    secrets: parts.secrets,
    ...(dispatcher ? { dispatcher } : {}),
  });
}
