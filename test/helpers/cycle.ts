// One poll cycle of a collect test on its fake clock, shared by the collector and chaos suites.
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import type { FakeClock } from "../../src/util/clock.js";
import { tickAndWait } from "./poller.js";

/** Moves `clock` one interval on, then ticks: the snapshot the tick's walk and reads end in. */
export async function advanceAndTick(
  p: Poller,
  clock: FakeClock,
  intervalMs: number,
): Promise<Snapshot> {
  clock.advance(intervalMs);
  return tickAndWait(p);
}
