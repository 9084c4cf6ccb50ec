// The contexts a simulator serves: one per team, each with its own fleet, event log, webhooks,
// team history, faults and counters; several teams share the nodes of one cluster.
import { systemClock } from "../util/clock.js";
import type { SimContext, SimFlavor } from "./context.js";
import { SimCounters } from "./counters.js";
import { SimulatorError } from "./errors.js";
import { DEFAULT_TEAM_ID, SimEventLog } from "./events.js";
import { SimFaults } from "./faults.js";
import { generateNodes } from "./generate.js";
import { Timers } from "./http-io.js";
import type { SimNode } from "./model.js";
import { deriveSeed, Prng } from "./prng.js";
import type { SimulatorOptions, SimulatorTeam } from "./simulator.js";
import { SimState } from "./state.js";
import { TeamHistory } from "./team-routes.js";
import type { SimTeamSpec } from "./teams.js";
import { SimWebhooks } from "./webhooks.js";

/** One team's context, the seed of its fleet and its name. */
export interface TeamRun {
  ctx: SimContext;
  seed: number;
  name: string;
}

/** One team as a Simulator shows it (`teams`, `team(id)`). */
export function teamOf(run: TeamRun): SimulatorTeam {
  const { ctx } = run;
  return {
    id: ctx.team.teamId,
    apiKey: ctx.apiKey,
    name: run.name,
    slug: ctx.state.snapshots.slug,
    state: ctx.state,
    faults: ctx.faults,
    counters: ctx.counters,
    events: ctx.events,
    webhooks: ctx.webhooks,
  };
}

/** The one team of a simulator started without `teams`: the cluster is its context alone. */
export function singleRun(
  options: SimulatorOptions,
  seed: number,
  sandboxes: number,
  flavor: SimFlavor,
): TeamRun {
  const cluster: SimContext[] = [];
  const ctx = simContext(options, { seed, sandboxes, flavor, cluster });
  cluster.push(ctx);
  return { ctx, seed, name: ctx.state.snapshots.slug };
}

/** A context per team, on nodes they share, sized for every team's sandboxes. */
export function teamRuns(
  options: SimulatorOptions,
  specs: readonly SimTeamSpec[],
  flavor: SimFlavor,
): TeamRun[] {
  const clock = options.clock ?? systemClock;
  const total = specs.reduce((n, t) => n + t.sandboxes, 0);
  const first = (specs[0] as SimTeamSpec).seed;
  const rng = new Prng(deriveSeed(first, "nodes"));
  const nodes = generateNodes(rng, options.nodes ?? 3, total, clock.now());
  const cluster: SimContext[] = [];
  return specs.map((spec) => {
    const teamOptions: SimulatorOptions = {
      ...options,
      apiKey: spec.apiKey,
      teamId: spec.id,
      teamSlug: spec.slug,
      teamConcurrencyLimit: spec.concurrencyLimit,
    };
    const ctx = simContext(teamOptions, {
      seed: spec.seed,
      sandboxes: spec.sandboxes,
      flavor,
      cluster,
      nodes,
    });
    cluster.push(ctx);
    return { ctx, seed: spec.seed, name: spec.name };
  });
}

function checkVersions(versions: readonly string[]): readonly string[] {
  if (versions.length === 0 || versions.some((v) => !/^\d+\.\d+\.\d+$/.test(v)))
    throw new SimulatorError("envdVersions must be a non-empty list of x.y.z versions");
  return versions;
}

/**
 * One team's state, event log, webhooks and team history, which both servers share; `cluster`
 * is every team's context (filled by the caller), `nodes` the nodes the teams share.
 */
function simContext(
  options: SimulatorOptions,
  o: {
    seed: number;
    sandboxes: number;
    flavor: SimFlavor;
    cluster: SimContext[];
    nodes?: SimNode[];
  },
): SimContext {
  const { seed, flavor } = o;
  const clock = options.clock ?? systemClock;
  const state = new SimState({
    seed,
    sandboxes: o.sandboxes,
    templates: options.templates ?? 5,
    nodes: options.nodes ?? 3,
    ...(options.envdVersions && { envdVersions: checkVersions(options.envdVersions) }),
    ...(options.teamSlug !== undefined && { teamSlug: options.teamSlug }),
    ...(o.nodes && { sharedNodes: o.nodes }),
    logLinesPerSandbox: options.logLinesPerSandbox ?? 5,
    clock,
  });
  const timers = new Timers();
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const events = new SimEventLog({
    state,
    clock,
    seed,
    teamId,
    ...(options.eventRetentionMs !== undefined && { retentionMs: options.eventRetentionMs }),
    ...(options.maxEvents !== undefined && { maxEvents: options.maxEvents }),
  });
  const webhooks = new SimWebhooks({
    teamId,
    seed,
    timers,
    now: () => clock.now(),
    ...(options.webhookMaxAttempts !== undefined && { maxAttempts: options.webhookMaxAttempts }),
    ...(options.webhookRetryDelayMs !== undefined && { retryDelayMs: options.webhookRetryDelayMs }),
    ...(options.webhookMaxInFlight !== undefined && { maxInFlight: options.webhookMaxInFlight }),
    ...(options.webhookPayload !== undefined && { payload: options.webhookPayload }),
  });
  const history = new TeamHistory(state, () => clock.now());
  events.onEvent((e) => {
    history.record(e, Date.parse(e.timestamp));
    // Deliveries run on their own promises: the request that caused the event never waits.
    webhooks.deliver(e);
  });
  return {
    state,
    faults: new SimFaults(seed),
    counters: new SimCounters(),
    clock,
    timers,
    events,
    webhooks,
    team: {
      teamId,
      concurrencyLimit: options.teamConcurrencyLimit,
      emptyMetrics: options.teamMetricsEmpty ?? false,
      history,
    },
    cluster: o.cluster,
    domain: options.domain ?? "sandbox.test",
    apiKey: options.apiKey,
    flavor,
    adminToken: options.adminToken,
    pageSizeCap: options.pageSizeCap ?? 100,
    tokenStyle: options.tokenStyle ?? "header",
    listOrder: options.listOrder ?? (flavor === "e2b" ? "started" : "id"),
    createRng: new Prng(deriveSeed(seed, "create")),
    nextPid: 1000,
  };
}
