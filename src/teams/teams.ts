// Several teams watched by one exporter (platform.teams, two or more): each team is a part of its
// own, with the services a single-team exporter has (its client, reading as the team; its registry
// and poll families; its facts and event ledger), sharing the exporter's request budget, dispatcher
// and scrubber. Health, overview and nodes are the cluster's: read once, by the exporter's part.
import { Agent, type Dispatcher, EnvHttpProxyAgent } from "undici";
import type { TickCollector } from "../collect/collector.js";
import type { Snapshot } from "../collect/snapshot.js";
import { readTeamKeys } from "../config/secret-files.js";
import type { Config } from "../config/settings.js";
import type { Effects, Needs, Services } from "../feature.js";
import { TeamLimitMetrics } from "../metrics/team-limit-metrics.js";
import type { RequestLimiter } from "../platform/control/limiter.js";
import { TeamLane } from "../platform/control/team-lane.js";
import { PlatformFacts } from "../platform/facts.js";
import { asTeam, controlClient, exporterMetrics, type Team } from "../services.js";

export type { Team } from "../services.js";

/** Whether `config` watches several teams: two or more listed, or teams discovered. */
export function severalTeams(config: Config): boolean {
  return config.platform.teams.length >= 2 || config.platform.discoverTeams;
}

/**
 * The teams `config` lists when it watches several (each key read from its file); `[]` for one or
 * none without discovery, which is the single team of platform.apiKey as before.
 */
export function configuredTeams(config: Config, read?: (path: string) => string): Team[] {
  if (!severalTeams(config)) return [];
  const keys = readTeamKeys(config, read);
  return config.platform.teams.map((t) => ({
    id: t.id,
    ...(t.name ? { name: t.name } : {}),
    ...(keys.has(t.id) ? { apiKey: keys.get(t.id) as string } : {}),
    ...(t.dailyBudget !== undefined ? { dailyBudget: t.dailyBudget } : {}),
  }));
}

/** `config` as `team`'s features read it: its own daily budget, where it has one. */
export function forTeamConfig(config: Config, team: Team): Config {
  if (team.dailyBudget === undefined) return config;
  return { ...config, cost: { ...config.cost, budget: { daily: team.dailyBudget } } };
}

/**
 * `config` with its one team, if platform.teams lists exactly one, as the single team it is: its
 * id is platform.teamId and its key file gives platform.apiKey, where those are unset; its
 * dailyBudget is cost.budget.daily.
 */
export function withOneTeam(config: Config, read?: (path: string) => string): Config {
  const [only, ...more] = config.platform.teams;
  if (only === undefined || more.length > 0 || config.platform.discoverTeams) return config;
  const key = readTeamKeys(config, read).get(only.id);
  const one = {
    ...config,
    platform: {
      ...config.platform,
      teamId: config.platform.teamId ?? only.id,
      apiKey: config.platform.apiKey || (key ?? ""),
    },
  };
  return only.dailyBudget === undefined ? one : forTeamConfig(one, only);
}

/** The collectors a team reads (every one but the cluster's), and those the cluster's part reads. */
export function splitCollectors(all: readonly TickCollector[]): {
  team: readonly TickCollector[];
  cluster: readonly TickCollector[];
} {
  return {
    team: all.filter((c) => c.scope !== "cluster"),
    cluster: all.filter((c) => c.scope === "cluster"),
  };
}

/** What every team's part shares. */
export interface Shared {
  readonly limiter: RequestLimiter;
  readonly dispatcher: Dispatcher;
  readonly needs: Needs;
  /** Every tick collector of the catalog: a team reads those not of the cluster. */
  readonly collectors: readonly TickCollector[];
}

/**
 * Connections the teams' dispatcher keeps open to the API at most: with the budget lifted, a
 * thousand teams' reads at once opened 5,345 (and timed out); requests past this wait for one.
 */
const TEAM_CONNECTIONS = 64;

/**
 * The dispatcher the teams share: the injected one, else one the caller closes at stop, through
 * HTTP(S)_PROXY as the exporter's own client goes (platform.envProxy).
 */
export function sharedDispatcher(s: Services): { dispatcher: Dispatcher; owned: boolean } {
  if (s.dispatcher) return { dispatcher: s.dispatcher, owned: false };
  const opts = { connections: TEAM_CONNECTIONS };
  const dispatcher = s.config.platform.envProxy ? new EnvHttpProxyAgent(opts) : new Agent(opts);
  return { dispatcher, owned: true };
}

/**
 * The services of `team`, made from the exporter's (`root`): its own client reading as the team
 * through its lane of the shared budget, its registry and families, its facts (its id is known).
 */
export function teamServices(
  root: Services,
  team: Team,
  shared: Shared,
  latest: () => Snapshot | undefined,
): Services {
  const { secrets } = root;
  const config = forTeamConfig(root.config, team);
  const effects: Effects = {
    ...root,
    logger: root.logger.child({ team: team.id }),
    collectors: splitCollectors(shared.collectors).team,
  };
  secrets.add(team.apiKey);
  const facts = new PlatformFacts({
    teamId: team.id,
    teamConcurrencyLimit: config.platform.teamConcurrencyLimit,
  });
  const metrics = exporterMetrics(config, effects, secrets, facts, shared.needs, {
    collectors: effects.collectors,
    teamPart: true,
  });
  const teamLimits = new TeamLimitMetrics({
    registry: metrics.registry,
    ns: config.metrics.namespace,
    facts,
    logger: effects.logger.child({ component: "metrics" }),
  });
  const lane = new TeamLane({ shared: shared.limiter, now: () => performance.now() });
  const admin = root.secretValues.adminToken;
  const control = controlClient(config, effects, {
    secrets,
    // Requests are the exporter's: counted once by endpoint, not per team (a team's histogram was
    // 151 samples, over a third of its series; its collectors' status says which team failed).
    metrics: root.metrics,
    limiter: lane,
    teamLimits,
    ...(admin ? { adminToken: admin } : {}),
    team: asTeam(team),
    dispatcher: shared.dispatcher,
  });
  return {
    ...effects,
    config,
    secrets,
    secretValues: root.secretValues,
    metrics,
    control,
    facts,
    pollIntervalMs: root.pollIntervalMs,
    ledger: metrics.events,
    policyHooks: [],
    listener: root.listener,
    latest,
  };
}
