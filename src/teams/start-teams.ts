// Several teams at the composition root: each team's services, its per-team features (cost, the
// policy) started with them, its poll publishing to them, its section of /status; the one body
// every part's series merge into; and a reload that adds, removes or changes teams.
import type { TickCollector } from "../collect/collector.js";
import type { Poller } from "../collect/poller.js";
import type { Config } from "../config/settings.js";
import type {
  Effects,
  Feature,
  Prepared,
  PreparedSet,
  ReloadContext,
  Services,
  Started,
} from "../feature.js";
import type { ExporterMetrics } from "../metrics/exporter-metrics.js";
import type { EventLedger } from "../metrics/lifecycle-events.js";
import type { Poll, TeamPoll } from "../poll/poll-feature.js";
import type { ListenerParts } from "../server/listen.js";
import { hasGoodData } from "../server/readiness.js";
import type { RootServices } from "../services.js";
import { TeamDiscovery } from "./team-discovery.js";
import {
  type TeamRun,
  TeamsModeChangedError,
  teamInfo,
  teamsStatus,
  withClusterHealth,
} from "./team-parts.js";
import {
  configuredTeams,
  forTeamConfig,
  type Shared,
  severalTeams,
  sharedDispatcher,
  splitCollectors,
  type Team,
  teamServices,
} from "./teams.js";
import { TeamsExposition } from "./teams-exposition.js";
import { TeamsLedger } from "./teams-ledger.js";

export type { TeamRun } from "./team-parts.js";

/** A team as the exporter shows it to tests and callers. */
export interface ExportedTeam {
  readonly id: string;
  readonly poller: Poller;
  readonly metrics: ExporterMetrics;
  readonly events: EventLedger | undefined;
}

/** The exporter's own effects: with several teams, it reads the cluster's collectors alone. */
export function forCluster(effects: Effects, several: boolean): Effects {
  return !several
    ? effects
    : { ...effects, collectors: splitCollectors(effects.collectors).cluster };
}

/** A single team's part of a reload: a reload to several teams is refused (it takes a restart). */
export const ONE_TEAM: Started = {
  reload(next) {
    if (severalTeams(next)) throw new TeamsModeChangedError(true);
    return undefined;
  },
};

/** Discovery of `set`'s teams when platform.discoverTeams is on. */
function discovery(root: RootServices, set: TeamSet): TeamDiscovery | undefined {
  const p = root.config.platform;
  if (!p.discoverTeams) return undefined;
  return new TeamDiscovery({
    control: root.control,
    add: (id) => set.add({ id }),
    remove: (id) => set.remove(id),
    watched: () => set.exported().map((t) => t.id),
    listed: () => set.listed,
    idleMs: p.discoveredTeamIdleMs,
    everyMs: root.pollIntervalMs,
  });
}

/** Starts each team of `teams` (see TeamSet); undefined for none: one team, as before. */
export async function startTeams(
  root: RootServices,
  catalog: readonly TickCollector[],
  teams: readonly Team[],
  on: ReadonlyArray<readonly [Feature, Prepared]>,
  all: PreparedSet,
): Promise<TeamSet | undefined> {
  if (!severalTeams(root.config)) return undefined;
  const set = new TeamSet(root, catalog, on, all);
  for (const team of teams) await set.add(team);
  return set;
}

/**
 * The teams at run time. Each has its services and its per-team features (`perTeam: "each"` among
 * `on`); `root` is the exporter's services, `catalog` every tick collector. A reload adds, removes
 * and replaces teams (a team whose key or name changed is replaced) between ticks.
 */
export class TeamSet {
  readonly exposition: TeamsExposition;
  /** What every per-team feature does together, as one feature: reload, begin, idle, halt, stop. */
  readonly feature: Started;
  private runs: TeamRun[] = [];
  private ledgerMap:
    | { runs: readonly TeamRun[]; map: ReadonlyMap<string, EventLedger> }
    | undefined;
  /** The ids platform.teams lists now (discovery never touches them). */
  listed: ReadonlySet<string>;
  private poll: Poll | undefined;
  private begun = false;
  /** The team changes a reload started, in order; a manual cycle waits for them. */
  private changes: Promise<void> = Promise.resolve();
  private readonly shared: Shared & { owned: boolean };
  /** platform.discoverTeams: the teams running-counts names, added and removed as they come. */
  private readonly discovery: TeamDiscovery | undefined;

  constructor(
    private readonly root: RootServices,
    catalog: readonly TickCollector[],
    private readonly on: ReadonlyArray<readonly [Feature, Prepared]>,
    private readonly all: PreparedSet,
  ) {
    this.listed = new Set(root.config.platform.teams.map((t) => t.id));
    const { dispatcher, owned } = sharedDispatcher(root);
    this.shared = {
      limiter: root.limiter,
      dispatcher,
      owned,
      needs: all.needs,
      collectors: catalog,
    };
    const ns = root.config.metrics.namespace;
    this.exposition = new TeamsExposition(
      () => [
        { metrics: root.metrics },
        ...this.runs.map((r) => ({ metrics: r.services.metrics, team: r.team.id })),
      ],
      () =>
        teamInfo(
          ns,
          this.runs.map((r) => r.team),
        ),
    );
    this.discovery = discovery(root, this);
    const each = () => this.runs.flatMap((r) => [...r.started.values()]);
    this.feature = {
      reload: (next, ctx) => this.reload(next, ctx),
      // The cluster's snapshot: a round of discovery when one is due, after any reload's changes.
      onSnapshot: () => {
        const d = this.discovery;
        if (d) this.queue(() => d.round(root.clock.now()));
      },
      status: () => this.discovery?.status(),
      begin: async () => {
        this.begun = true;
        for (const f of each()) await f.begin?.();
      },
      idle: async () => {
        await this.changes;
        for (const f of each()) await f.idle?.();
      },
      halt: async () => {
        for (const f of each()) await f.halt?.();
      },
      stop: async () => {
        for (const f of each().reverse()) await f.stop?.();
      },
    };
  }

  /**
   * The exporter's services for a feature that runs once (the probe): it acts in
   * platform.probeTeam, else the first team listed.
   */
  firstTeam(s: Services): Services {
    const id = s.config.platform.probeTeam;
    const run = id === undefined ? this.runs[0] : this.runs.find((r) => r.team.id === id);
    // E2B's webhook (once) passes each event to its team's ledger.
    const ledger = new TeamsLedger(() => this.ledgers);
    return { ...s, ledger, ...(run ? { control: run.services.control } : {}) };
  }

  /** Each team's event ledger by team id, made again when the teams change. */
  private get ledgers(): ReadonlyMap<string, EventLedger> {
    if (this.ledgerMap?.runs !== this.runs) {
      const entries = this.runs.flatMap((r) => {
        const l = r.services.metrics.events;
        return l ? [[r.team.id, l] as const] : [];
      });
      this.ledgerMap = { runs: this.runs, map: new Map(entries) };
    }
    return this.ledgerMap.map;
  }

  /** Each team's part of the poll, for the poll's start. */
  polls(): TeamPoll[] {
    return this.runs.map((r) => this.pollOf(r));
  }

  /** Hands each team its poller once the poll started; teams added later get theirs at once. */
  attach(poll: Poll): void {
    this.poll = poll;
    for (const t of poll.teams()) {
      const run = this.runs.find((r) => r.team.id === t.id);
      if (run) run.poller = t.poller;
    }
  }

  /** What the listener serves differently: the merged body, /status's teams, readiness. */
  listenerParts(rootPoller: Poller): Pick<ListenerParts, "render" | "teams" | "ready"> {
    return {
      render: (format, gzip) => this.exposition.render(format, gzip),
      teams: (now) => teamsStatus(this.runs, now),
      // Ready once the exporter's part or one team holds good data: a revoked key is one team's.
      ready: () =>
        hasGoodData(rootPoller.latest) || this.runs.some((r) => hasGoodData(r.poller?.latest)),
    };
  }

  /** Each team, for tests and callers. */
  exported(): ExportedTeam[] {
    return this.runs.map((r) => ({
      id: r.team.id,
      poller: r.poller as Poller,
      metrics: r.services.metrics,
      events: r.services.metrics.events,
    }));
  }

  /** Resolves once the team changes of the reloads so far are done. */
  settled(): Promise<void> {
    return this.changes;
  }

  /** How many teams, for the start-up line. */
  count(): { teams: number } {
    return { teams: this.runs.length };
  }

  /** Starts `team`: its services, its per-team features, and its poller once the poll runs. */
  async add(team: Team, reloaded?: { next: Config; ctx: ReloadContext }): Promise<void> {
    const run: TeamRun = {
      team,
      services: teamServices(this.root, team, this.shared, () => run.poller?.latest),
      started: new Map(),
    };
    const started = run.started as Map<string, Started>;
    for (const [f, p] of this.on)
      if (f.perTeam === "each") started.set(f.name, await p.start(run.services, this.all));
    // Started from the configuration read at start: brought to the reloaded one at once.
    if (reloaded) for (const f of started.values()) f.reload?.(reloaded.next, reloaded.ctx)?.();
    if (this.begun) for (const f of started.values()) await f.begin?.();
    if (this.poll) run.poller = this.poll.addTeam(this.pollOf(run));
    this.runs = [...this.runs, run];
  }

  /** Stops team `id`: its features act no more, its reads end (a short grace), its client closes. */
  async remove(id: string): Promise<void> {
    const run = this.runs.find((r) => r.team.id === id);
    if (!run) return;
    this.runs = this.runs.filter((r) => r !== run);
    const features = [...run.started.values()];
    for (const f of features) await f.halt?.();
    await this.poll?.removeTeam(id);
    for (const f of features.reverse()) await f.stop?.();
    await run.services.control.close(true);
  }

  /** Closes the teams' clients and the shared dispatcher. */
  async close(abandon: boolean): Promise<void> {
    await Promise.all(this.runs.map((r) => r.services.control.close(abandon)));
    const { dispatcher, owned } = this.shared;
    if (owned) await (abandon ? dispatcher.destroy() : dispatcher.close());
  }

  /**
   * The teams' part of a reload: the next list is read (its key files too) and checked first; the
   * teams kept reload their features; once every part passed, removed teams stop and added ones
   * start, between ticks. Going to one team or none is refused (it takes a restart).
   */
  private reload(next: Config, ctx: ReloadContext): () => void {
    if (!severalTeams(next)) throw new TeamsModeChangedError(false);
    const wanted = configuredTeams(next);
    for (const t of wanted) this.root.secrets.add(t.apiKey);
    const same = (a: Team, b: Team) => a.id === b.id && a.name === b.name && a.apiKey === b.apiKey;
    // A team discovery found and the next list does not name stays: discovery removes it when idle.
    const found = (r: TeamRun) =>
      this.discovery?.found(r.team.id) === true && !wanted.some((w) => w.id === r.team.id);
    const kept = this.runs.filter((r) => found(r) || wanted.some((w) => same(w, r.team)));
    const gone = this.runs.filter((r) => !kept.includes(r)).map((r) => r.team.id);
    const added = wanted.filter((w) => !kept.some((r) => same(w, r.team)));
    // Each team's features read the next configuration as the team has it (its own budget).
    const apply = kept.flatMap((r) => {
      const as = forTeamConfig(next, wanted.find((w) => same(w, r.team)) ?? r.team);
      return [...r.started.values()].map((f) => f.reload?.(as, ctx));
    });
    return () => {
      for (const a of apply) a?.();
      this.listed = new Set(wanted.map((t) => t.id));
      this.queue(async () => {
        for (const id of gone) await this.remove(id);
        for (const t of added) await this.add(t, { next: forTeamConfig(next, t), ctx });
        if (gone.length + added.length > 0)
          this.root.logger.info(
            { added: added.map((t) => t.id), removed: gone },
            "teams changed by reload",
          );
      });
    };
  }

  /** Runs a change of the teams after the ones before it; a failure is logged, never thrown. */
  private queue(change: () => Promise<void>): void {
    this.changes = this.changes
      .then(change)
      .catch((err) =>
        this.root.logger.error({ err }, "changing the teams failed; some may be missing"),
      );
  }

  /** A team's part of the poll: its snapshots go to its features with the cluster's health. */
  private pollOf(r: TeamRun): TeamPoll {
    return {
      id: r.team.id,
      services: r.services,
      publish: (snapshot) => {
        // The cluster's health, read once, is each team's: the policy acts only while it is up.
        const whole = withClusterHealth(snapshot, this.root.latest(), this.root.pollIntervalMs);
        for (const f of r.started.values()) f.onSnapshot?.(whole);
      },
    };
  }
}
