// The E2B demo's snapshot templates: unnamed ones of several ages, some never started from, and
// two named ones in use, so a snapshot retention rule finds something to plan and something to keep.
import type { SimSnapshot } from "./snapshot-store.js";
import type { SimState } from "./state.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** One seeded snapshot: its builds' ages (oldest first), its name, its last use and spawns. */
interface DemoSnapshot {
  alias?: string;
  builtAgo: readonly number[];
  usedAgo?: number;
  spawns?: number;
}

/** Ages are relative to the simulator's clock when the demo starts. */
const DEMO_SNAPSHOTS: readonly DemoSnapshot[] = [
  { builtAgo: [45 * DAY] },
  { builtAgo: [20 * DAY], usedAgo: HOUR, spawns: 3 },
  { builtAgo: [9 * DAY] },
  { builtAgo: [3 * DAY], usedAgo: HOUR, spawns: 1 },
  { builtAgo: [2 * HOUR] },
  { alias: "nightly", builtAgo: [3 * DAY, 2 * DAY, DAY], usedAgo: HOUR, spawns: 12 },
  { alias: "ci-base", builtAgo: [30 * DAY], usedAgo: HOUR, spawns: 40 },
];

/**
 * Seeds the demo's snapshot templates, taken of the fleet's first sandboxes by id (they may be
 * gone later: a snapshot outlives its sandbox). Returns them in DEMO_SNAPSHOTS' order.
 */
export function seedDemoSnapshots(state: SimState): SimSnapshot[] {
  const now = state.clock.now();
  const ids = state.sortedIds();
  const out: SimSnapshot[] = [];
  for (const [i, d] of DEMO_SNAPSHOTS.entries()) {
    const source = state.sandbox(ids[i % Math.max(ids.length, 1)] ?? "");
    if (!source) break;
    out.push(
      state.snapshots.seed({
        source,
        ...(d.alias !== undefined && { alias: d.alias }),
        buildTimes: d.builtAgo.map((ago) => now - ago),
        ...(d.usedAgo !== undefined && { lastSpawnedAt: now - d.usedAgo }),
        ...(d.spawns !== undefined && { spawnCount: d.spawns }),
      }),
    );
  }
  return out;
}
