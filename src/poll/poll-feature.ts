// The poll as the composition root sees it: the poller built from the poll settings and the shared
// services, on its schedule, publishing each snapshot to the exporter's families and then to the
// features; what a failed collector means is logged here.
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { Poller, type PollerOptions } from "../collect/poller.js";
import type { Snapshot } from "../collect/snapshot.js";
import type { Needs, Services } from "../feature.js";
import { registerInvalidValueMetrics } from "../metrics/self-metrics.js";
import { systemClock } from "../util/clock.js";
import { type Schedule, startSchedule } from "../util/schedule.js";

/**
 * How long stop() waits for poll reads still in flight (the poller gave up on them; they may hang
 * up to their own timeouts, page after page) before their requests are cut.
 */
const STOP_READS_GRACE_MS = 1_000;

/** The running poll. */
export interface Poll {
  /** The exporter's poller: the whole poll, or with several teams the cluster's reads. */
  readonly poller: Poller;
  /** Several teams: each team's poller now, in the order they were added; empty with one team. */
  teams(): ReadonlyArray<{ readonly id: string; readonly poller: Poller }>;
  /** Several teams: a team added while running (a reload); its first tick is the next one. */
  addTeam(team: TeamPoll): Poller;
  /** Several teams: a team no longer read; waits a short grace for its reads in flight. */
  removeTeam(id: string): Promise<void>;
  /** The schedule as configured (an interval or a cron expression), for the start-up line. */
  readonly schedule: string;
  /** Runs one cycle now and waits for its walks (skipped and counted if one is in flight). */
  runCycle(): Promise<void>;
  /** Starts the schedule's first cycle (not when manual). */
  begin(): void;
  /** Stops the schedule and waits a short grace for reads; false: reads were still in flight. */
  stop(): Promise<boolean>;
}

/** One team's part of the poll (several teams): its services and where its snapshots go. */
export interface TeamPoll {
  readonly id: string;
  readonly services: Services;
  /** Gets each of the team's snapshots after the team's own families have it. */
  readonly publish: (snapshot: Snapshot) => void;
}

/** A poller, and what a tick that finds its walk still running counts and logs. */
interface Ticking {
  readonly poller: Poller;
  /** Counts the skipped tick (a poller that walks nothing counts none). */
  readonly skipped: () => boolean;
  readonly log: Logger;
}

const SKIPPED = "sandbox walk still running at this tick; the other collectors were refreshed";

/**
 * Starts the poll; `publish` gets each snapshot after the exporter's own families have it. With
 * `teams` (several), the exporter's poller reads the cluster alone (no walk) and each team's
 * poller reads its team, all on the one schedule.
 */
export function startPoll(
  s: Services,
  needs: Needs,
  publish: (snapshot: Snapshot) => void,
  teams: readonly TeamPoll[] = [],
): Poll {
  const { config } = s;
  const log = s.logger.child({ component: "poll" });
  const onError = (err: unknown): void => log.error({ err }, "poll cycle failed");
  const root = ticking(s, needs, publish, log, teams.length === 0);
  const part = (t: TeamPoll) => ({
    id: t.id,
    ...ticking(t.services, needs, t.publish, t.services.logger.child({ component: "poll" }), true),
  });
  // The teams now: a reload adds and removes them between ticks.
  let parts = teams.map(part);
  const all = (): readonly Ticking[] => [root, ...parts];
  // A tick the schedule skipped (the last one still running) is every part's: one line says so.
  const onSkip = (): void => {
    if (all().filter((p) => p.skipped()).length > 0) log.warn(SKIPPED);
  };
  // The first cycle runs at start (begin): the schedule's first tick comes an interval later, not
  // at the next whole second while that cycle still walks. croner keeps the system's time.
  const schedule: Schedule = startSchedule(
    s.manual ? undefined : config.poll.schedule,
    async () => {
      await Promise.all(
        all().map(async (p) => {
          if ((await p.poller.tick()).walkBusy && p.skipped()) p.log.warn(SKIPPED);
        }),
      );
    },
    onSkip,
    onError,
    { firstTickAt: systemClock.now() + s.pollIntervalMs - 500 },
  );
  const pollers = (): Poller[] => all().map((p) => p.poller);
  return {
    poller: root.poller,
    teams: () => parts.map((p) => ({ id: p.id, poller: p.poller })),
    addTeam(t) {
      const added = part(t);
      parts = [...parts, added];
      return added.poller;
    },
    async removeTeam(id) {
      const gone = parts.filter((p) => p.id === id);
      parts = parts.filter((p) => p.id !== id);
      await drained(gone.map((p) => p.poller));
    },
    schedule: config.poll.schedule.text,
    async runCycle() {
      await schedule.trigger();
      await Promise.all(pollers().map((p) => p.walkDone()));
    },
    begin() {
      if (!s.manual) void schedule.trigger();
    },
    async stop() {
      await schedule.stop();
      return drained(pollers());
    },
  };
}

/** One poller of `s` (the exporter's, or a team's) and what its skipped tick tells. */
function ticking(
  s: Services,
  needs: Needs,
  publish: (snapshot: Snapshot) => void,
  log: Logger,
  walk: boolean,
): Ticking {
  const { config, metrics } = s;
  // Each reader owns its normalizer: what one's records teach the field tables is its own.
  const reader = s.control.withOwnNormalizer("poll");
  // What the poll's reads left out (values that did not parse, records without an id).
  registerInvalidValueMetrics(metrics.registry, config.metrics.namespace, () =>
    reader.invalid.entries(),
  );
  const poller = new Poller({
    ...pollerOptions(s, needs, log),
    ...(walk ? {} : { walk: false }),
    reader,
    onSnapshot: publisher(s, log, publish),
    onError: (err) => log.error({ err }, "poll cycle failed"),
  });
  return {
    poller,
    log,
    skipped: () => {
      if (walk) metrics.skippedTick();
      return walk;
    },
  };
}

/** What the poller is given of the settings and services, and what it tells the log. */
function pollerOptions(
  s: Services,
  needs: Needs,
  log: Logger,
): Omit<PollerOptions, "reader" | "onSnapshot" | "onError"> {
  const { config, metrics } = s;
  return {
    clock: s.clock,
    collectors: s.collectors,
    // A feature that needs the storage inventory (the retention rules) turns it on.
    poll: needs.storage === true ? { ...config.poll, storage: true } : config.poll,
    runningStates: config.states.running,
    flavor: config.platform.flavor,
    ...(s.ledger ? { eventSink: s.ledger } : {}),
    teamId: () => s.facts.teamId(),
    clusterWide: config.shard.index === 0,
    shard: config.shard,
    readHealth: needs.health === true,
    // Nothing reads metadata without per-sandbox series or a feature that asks: the compact table.
    compactSandboxes: !config.metrics.perSandboxMetrics && needs.sandboxMetadata !== true,
    intervalMs: s.pollIntervalMs,
    onPageLimit: (from, to) =>
      log.warn(
        { from, to },
        "the platform refused the page size: walking with the smaller one from now on (set poll.pageLimit to it)",
      ),
    onSupport: (collector, supported, error) =>
      log.info(
        { collector, ...(error ? { answer: error.message } : {}) },
        supported
          ? "collector supported again: the platform now serves its endpoint"
          : "collector unsupported by this platform: not polled, re-checked at poll.capabilityRecheck",
      ),
    onWalkAbandoned: (maxWalkMs) => {
      metrics.walkAbandoned();
      log.warn({ maxWalkMs }, "sandbox walk abandoned as incomplete: it ran past poll.maxWalkMs");
    },
    onDrop: (confirmed) => {
      metrics.walkDrop(confirmed);
      log.warn(
        { confirmed },
        confirmed
          ? "sandbox count fell sharply; a second walk confirmed it"
          : "sandbox count fell sharply in one walk only; that walk was discarded",
      );
    },
  };
}

/** Hands each snapshot to the exporter's families, then to the features, and logs what failed. */
function publisher(
  s: Services,
  log: Logger,
  publish: (snapshot: Snapshot) => void,
): (snapshot: Snapshot) => Promise<void> {
  return async (snapshot) => {
    // Rendered in slices between which scrapes are served the previous body (see updateAsync).
    await s.metrics.updateAsync(snapshot);
    publish(snapshot);
    for (const c of Object.values(snapshot.collectors)) {
      if (!c.success && !c.skipped && !c.unsupported && snapshot.refreshed.includes(c.name))
        log.warn(
          { collector: c.name, error: c.error },
          c.lastSuccessAt === undefined
            ? "collector failed; no good data yet"
            : "collector failed; serving last good data",
        );
    }
    log.debug(
      {
        cycle: snapshot.cycle,
        ms: snapshot.finishedAt - snapshot.startedAt,
        sandboxes: snapshot.sandboxes?.length,
      },
      "poll cycle done",
    );
  };
}

/** Waits a short grace for the pollers' reads; false: reads were still in flight (then cut). */
async function drained(pollers: readonly Poller[]): Promise<boolean> {
  const grace = new AbortController();
  const done = await Promise.race([
    Promise.all(pollers.map((p) => p.walkDone())).then(() => true),
    sleep(STOP_READS_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
  ]);
  grace.abort();
  return done;
}
