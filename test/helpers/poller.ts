// The Poller the collect tests build: the settings none of them varies in one place.

import { ConfigSchema, TICK_COLLECTORS } from "../../src/catalog.js";
import type { PollSettings } from "../../src/collect/collector.js";
import { Poller, type PollerOptions } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";

/** The poll settings: the schema's defaults, `over` winning (as given: tests go past the ranges). */
export function pollSettings(over: Partial<PollSettings> = {}): PollSettings {
  return { ...ConfigSchema.parse({}).poll, ...over };
}

/**
 * What testPoller takes: PollerOptions, the poll settings given only where they differ (the
 * collectors default to the catalog's).
 */
export type TestPollerOptions = Partial<Omit<PollerOptions, "poll">> &
  Pick<PollerOptions, "reader" | "clock" | "intervalMs"> & { poll?: Partial<PollSettings> };

/**
 * A poller reading `o.reader` every `o.intervalMs`: shard 0 of 1, no detail reads, 100 records a
 * page, at most 1,000 pages a list, `o` (and `o.poll`) winning.
 */
export function testPoller(o: TestPollerOptions): Poller {
  const { poll, ...rest } = o;
  return new Poller({
    clusterWide: true,
    runningStates: ["running"],
    collectors: TICK_COLLECTORS,
    ...rest,
    poll: pollSettings({
      pageLimit: 100,
      maxPages: 1_000,
      confirmDropRatio: 0.5,
      maxBackoffMs: 4 * o.intervalMs,
      capabilityRecheckMs: 10 * o.intervalMs,
      ...poll,
    }),
  });
}

/** One tick, and the walk and usage read it started: the snapshot they end in. */
export async function tickAndWait(p: Poller): Promise<Snapshot> {
  await p.tick();
  await p.walkDone();
  return p.latest as Snapshot;
}
