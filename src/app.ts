// The composition root: shared services, the poll, then each feature of FEATURES in order, and the
// listener serving their routes. It names no setting of any single feature; each folder's
// *-feature.ts says what its feature reads and adds.
import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import { FEATURES, TICK_COLLECTORS } from "./catalog.js";
import type { Poller } from "./collect/poller.js";
import type { Snapshot } from "./collect/snapshot.js";
import { readSecretFiles } from "./config/secret-files.js";
import type { Config } from "./config/settings.js";
import type { Effects, Exposed, Feature, Prepared, Started } from "./feature.js";
import type { ExporterMetrics } from "./metrics/exporter-metrics.js";
import type { EventLedger } from "./metrics/lifecycle-events.js";
import type { PolicyEngine } from "./policy/engine.js";
import { type Poll, startPoll } from "./poll/poll-feature.js";
import type { ProbeService } from "./probe/probe-service.js";
import { type RunningServer, startListener } from "./server/listen.js";
import { mergeNeeds, startServices } from "./services.js";
import { type ExportedTeam, forCluster, ONE_TEAM, startTeams } from "./teams/start-teams.js";
import { configuredTeams, severalTeams, withOneTeam } from "./teams/teams.js";
import type { Clock } from "./util/clock.js";
import { Secrets } from "./util/secrets.js";

/** Effects the exporter needs from outside. */
export interface AppDeps {
  logger: Logger;
  clock: Clock;
  /** Control-channel dispatcher; defaults to one honouring HTTP(S)_PROXY. */
  dispatcher?: Dispatcher;
  /** Do not start the schedule (tests drive cycles with runCycle). */
  manual?: boolean;
  /** Reads the policy rule file; default fs.readFileSync as UTF-8. */
  readFile?: (path: string) => string;
  /** Loads the configuration again for a reload (SIGHUP, POST /-/reload); default: the same one. */
  reloadConfig?: () => Config;
  /** Secret values scrubbed from errors, labels and (when the logger shares it) log lines. */
  secrets?: Secrets;
  /** The features, in the order they start; default the catalog's (any order works the same). */
  features?: readonly Feature[];
}

/** A running exporter. */
export interface Exporter {
  readonly server: RunningServer;
  readonly metrics: ExporterMetrics;
  readonly poller: Poller;
  /** The synthetic prober, when probes are enabled. */
  readonly prober: ProbeService | undefined;
  /** The policy engine, when policy is enabled. */
  readonly policy: PolicyEngine | undefined;
  /** The lifecycle event ledger (poll.events): the sink of the events collector and the webhook. */
  readonly events: EventLedger | undefined;
  /** Several teams (platform.teams): each team's poller, families and ledger; empty with one. */
  readonly teams: readonly ExportedTeam[];
  /** Re-reads the config and policy files; a bad file is rejected and the old one kept. */
  reload(): Promise<{ ok: boolean; error?: string }>;
  /** Runs one poll cycle now (skipped and counted if one is in flight). */
  runCycle(): Promise<Snapshot | undefined>;
  stop(): Promise<void>;
}

/** Starts the exporter described by `config`; the first cycle starts at once. */
export async function startExporter(given: Config, deps: AppDeps): Promise<Exporter> {
  const config = withOneTeam(given);
  const effects: Effects = {
    logger: deps.logger,
    clock: deps.clock,
    manual: deps.manual === true,
    readFile: deps.readFile ?? ((path) => readFileSync(path, "utf8")),
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
    collectors: TICK_COLLECTORS,
  };
  // Each feature reads and checks its files before anything starts: a bad one stops the start.
  const prepared = (deps.features ?? FEATURES).map((f) => [f, f.prepare(config, effects)] as const);
  const on = prepared.filter((p): p is readonly [Feature, Prepared] => p[1] !== undefined);
  const needs = mergeNeeds(on.map(([, p]) => p.needs));
  const rules = on.flatMap(([, p]) => p.rules ?? []);
  // Several teams (platform.teams): the exporter's own part reads the cluster, each team its own.
  const teamList = configuredTeams(config);
  const several = severalTeams(config);
  let poll: Poll | undefined;
  const s = startServices(
    config,
    forCluster(effects, several),
    deps.secrets ?? new Secrets(),
    () => poll?.poller.latest,
    needs,
    several ? { first: teamList[0] } : undefined,
  );
  const all = { needs, rules };
  const teams = await startTeams(s, effects.collectors, teamList, on, all);
  const once = teams?.firstTeam(s) ?? s;
  const started = new Map<string, Started>();
  for (const [f, p] of on)
    if (!teams || f.perTeam !== "each") started.set(f.name, await p.start(once, all));
  const features = [...started.values()];
  // The per-team features as one feature; its /status section is team discovery.
  started.set("teamDiscovery", teams?.feature ?? ONE_TEAM);
  const everyFeature = [...features, ...(teams ? [teams.feature] : [])];
  const publish = (snapshot: Snapshot): void => {
    for (const f of everyFeature) f.onSnapshot?.(snapshot);
  };
  const running = startPoll(s, needs, publish, teams?.polls() ?? []);
  teams?.attach(running);
  poll = running;
  const exposed: Partial<Exposed> = Object.assign({}, ...features.map((f) => f.exposes ?? {}));
  const listener = await startListener(s, {
    poller: running.poller,
    started,
    off: prepared.filter(([, p]) => p === undefined).map(([f]) => f),
    reloadConfig: () => withOneTeam(deps.reloadConfig?.() ?? given),
    readSecrets: (next, names) => readSecretFiles(next, names),
    ...teams?.listenerParts(running.poller),
  });
  running.begin();
  for (const f of everyFeature) await f.begin?.();
  // One scalar each: pretty logs print them on one line.
  const where = { shard: `${config.shard.index}/${config.shard.total}`, ...teams?.count() };
  const { url } = listener.server;
  deps.logger.info({ url, schedule: running.schedule, ...where }, "sandbox-exporter listening");
  return {
    server: listener.server,
    metrics: s.metrics,
    poller: poll.poller,
    events: s.metrics.events,
    get teams() {
      return teams?.exported() ?? [];
    },
    prober: exposed.prober,
    policy: exposed.policy,
    reload: listener.reload,
    runCycle: async () => {
      await teams?.settled(); // the teams a reload changed, before the cycle reads them
      await running.runCycle();
      for (const f of everyFeature) await f.idle?.();
      return running.poller.latest;
    },
    async stop() {
      for (const f of everyFeature) await f.halt?.();
      const drained = await running.stop();
      for (const f of [...everyFeature].reverse()) await f.stop?.();
      await listener.server.close();
      await s.control.close(!drained);
      await teams?.close(!drained);
    },
  };
}
