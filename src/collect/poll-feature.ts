// The poll as the composition root sees it: the poller built from the poll settings and the shared
// services, on its schedule, publishing each snapshot to the exporter's families and then to the
// features; what a failed collector means is logged here.
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { Needs, Services } from "../feature.js";
import { registerInvalidValueMetrics } from "../metrics/self-metrics.js";
import { systemClock } from "../util/clock.js";
import { type Schedule, startSchedule } from "../util/schedule.js";
import { Poller, type PollerOptions } from "./poller.js";
import type { Snapshot } from "./snapshot.js";

/**
 * How long stop() waits for poll reads still in flight (the poller gave up on them; they may hang
 * up to their own timeouts, page after page) before their requests are cut.
 */
const STOP_READS_GRACE_MS = 1_000;

/** The running poll. */
export interface Poll {
  readonly poller: Poller;
  /** The schedule as configured (an interval or a cron expression), for the start-up line. */
  readonly schedule: string;
  /** Runs one cycle now and waits for its walk (skipped and counted if one is in flight). */
  runCycle(): Promise<void>;
  /** Starts the schedule's first cycle (not when manual). */
  begin(): void;
  /** Stops the schedule and waits a short grace for reads; false: reads were still in flight. */
  stop(): Promise<boolean>;
}

/** Starts the poll; `publish` gets each snapshot after the exporter's own families have it. */
export function startPoll(s: Services, needs: Needs, publish: (snapshot: Snapshot) => void): Poll {
  const { config, metrics } = s;
  // Each reader owns its normalizer: what one's records teach the field tables is its own.
  const reader = s.control.withOwnNormalizer("poll");
  // One child logger per component: every line says where it came from.
  const log = s.logger.child({ component: "poll" });
  // What the poll's reads left out (values that did not parse, records without an id).
  registerInvalidValueMetrics(metrics.registry, config.metrics.namespace, () =>
    reader.invalid.entries(),
  );
  const onError = (err: unknown): void => log.error({ err }, "poll cycle failed");
  const poller = new Poller({
    ...pollerOptions(s, needs, log),
    reader,
    onSnapshot: publisher(s, log, publish),
    onError,
  });
  const onSkip = (): void => {
    metrics.skippedTick();
    log.warn("sandbox walk still running at this tick; the other collectors were refreshed");
  };
  // The first cycle runs at start (begin): the schedule's first tick comes an interval later, not
  // at the next whole second while that cycle still walks. croner keeps the system's time.
  const schedule: Schedule = startSchedule(
    s.manual ? undefined : config.poll.schedule,
    async () => {
      if ((await poller.tick()).walkBusy) onSkip();
    },
    onSkip,
    onError,
    { firstTickAt: systemClock.now() + s.pollIntervalMs - 500 },
  );
  return {
    poller,
    schedule: config.poll.schedule.text,
    async runCycle() {
      await schedule.trigger();
      await poller.walkDone();
    },
    begin() {
      if (!s.manual) void schedule.trigger();
    },
    stop: () => stopPoll(schedule, poller),
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

/** Stops the schedule and waits a short grace for reads; false: reads were still in flight. */
async function stopPoll(schedule: Schedule, poller: Poller): Promise<boolean> {
  await schedule.stop();
  // Reads still in flight get a short grace, then the dispatcher cuts them.
  const grace = new AbortController();
  const drained = await Promise.race([
    poller.walkDone().then(() => true),
    sleep(STOP_READS_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
  ]);
  grace.abort();
  return drained;
}
