// The order in which the usage signal checks the sandboxes idle by their logs, in batches.
import { USAGE_BATCH, USAGE_QUERY_BYTES } from "../collect/usage-collector.js";
import type { Sandbox } from "../platform/types.js";
import type { PolicyMemory } from "./evaluate.js";

/** Batches of sandboxes to check, taken one at a time; each sandbox is handed out once. */
export interface UsageQueue {
  /**
   * The next batch (empty: done). While `more` is true, the next in order; otherwise only as long
   * as sampled ones are left, which it holds first, topped up with the next in order (the
   * request costs the same).
   */
  next(more: boolean): Sandbox[];
}

/** Sandbox id -> the longest idle streak any rule holds it on. */
export function heldStreaks(memory: PolicyMemory): Map<string, number> {
  const held = new Map<string, number>();
  for (const byId of memory.streaks.values())
    for (const [id, streak] of byId) held.set(id, Math.max(held.get(id) ?? 0, streak.count));
  return held;
}

/**
 * Streak holders first, the longest streak first: a streak left unchecked starts over, and then
 * nothing ever reaches consecutiveCycles when the fleet is idle far beyond the run's actions.
 * Then the sample, then the longest idle; sandboxes in cooldown last (no action can reach them).
 */
export function usageOrder(
  idleByLogs: readonly Sandbox[],
  o: {
    held: ReadonlyMap<string, number>;
    sample: ReadonlySet<Sandbox>;
    cooling: ReadonlySet<string>;
    activity: ReadonlyMap<string, number | undefined>;
  },
): UsageQueue {
  const rank = (s: Sandbox) =>
    o.cooling.has(s.id) ? 3 : o.held.has(s.id) ? 0 : o.sample.has(s) ? 1 : 2;
  const order = [...idleByLogs].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (o.held.get(b.id) ?? 0) - (o.held.get(a.id) ?? 0) ||
      (o.activity.get(a.id) ?? 0) - (o.activity.get(b.id) ?? 0),
  );
  const sampled = order.filter((s) => o.sample.has(s));
  const taken = new Set<Sandbox>();
  let inOrder = 0;
  let inSample = 0;
  // Bytes of URL-encoded ids in the batch being built (a request line has a size limit too).
  let bytes = 0;
  const take = (from: readonly Sandbox[], at: number, part: Sandbox[]): number => {
    if (part.length === 0) bytes = 0;
    let i = at;
    for (; i < from.length && part.length < USAGE_BATCH; i++) {
      const s = from[i] as Sandbox;
      if (taken.has(s)) continue;
      const size = encodeURIComponent(s.id).length;
      // An id that cannot fit alone is never asked about: its usage stays unknown, never idle.
      if (size > USAGE_QUERY_BYTES) {
        taken.add(s);
        continue;
      }
      const added = part.length === 0 ? size : size + 3;
      if (bytes + added > USAGE_QUERY_BYTES) break;
      bytes += added;
      taken.add(s);
      part.push(s);
    }
    return i;
  };
  return {
    next(more) {
      const part: Sandbox[] = [];
      if (!more) {
        inSample = take(sampled, inSample, part);
        if (part.length === 0) return part;
      }
      inOrder = take(order, inOrder, part);
      return part;
    },
  };
}
