// The Poller the collect tests build: the settings none of them varies in one place.
import { Poller, type PollerOptions } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";

/** A poller reading `o.reader` every `o.intervalMs`: shard 0 of 1, no detail reads, `o` winning. */
export function testPoller(
  o: Partial<PollerOptions> & Pick<PollerOptions, "reader" | "clock" | "intervalMs">,
): Poller {
  return new Poller({
    pageLimit: 100,
    maxPages: 1_000,
    nodeDetails: false,
    templateDetails: false,
    clusterWide: true,
    confirmDropRatio: 0.5,
    maxBackoffMs: 4 * o.intervalMs,
    capabilityRecheckMs: 10 * o.intervalMs,
    ...o,
  });
}

/** One tick, and the walk and usage read it started: the snapshot they end in. */
export async function tickAndWait(p: Poller): Promise<Snapshot> {
  await p.tick();
  await p.walkDone();
  return p.latest as Snapshot;
}
