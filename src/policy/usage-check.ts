// The usage signal of a run: of the sandboxes idle by their logs, which are idle by CPU too, read
// with batched GET /sandboxes/metrics within the run's read and time budgets.

import type { Sandbox, SandboxUsage } from "../platform/types.js";
import type { PolicyMemory } from "./evaluate.js";
import type { PolicyPlatform } from "./executor.js";
import type { PolicyMetrics } from "./policy-metrics.js";
import type { PolicySpec } from "./policy-settings.js";
import { heldStreaks, usageOrder } from "./usage-queue.js";

/** What one usage check works on. */
export interface UsageCheck {
  platform: Pick<PolicyPlatform, "sandboxUsage">;
  metrics: PolicyMetrics;
  memory: PolicyMemory;
  /** Sandbox -> the shortest idleFor asked of it. */
  asked: ReadonlyMap<Sandbox, number>;
  /** Last activity by id (edited in place, see checkUsage). */
  activity: Map<string, number | undefined>;
  sample: ReadonlySet<Sandbox>;
  cooling: ReadonlySet<string>;
  /** Sandboxes idle by both signals that fill the run's actions: reading stops there. */
  enough: number;
  spec: PolicySpec;
  now: number;
  budget: { until: number; clock: () => number };
}

/**
 * The usage signal: of the sandboxes idle by their logs, the ones already held on an idle streak
 * (longest first), then the sample, then the longest idle are checked with batched reads of
 * GET /sandboxes/metrics until as many are idle by CPU too as the run may act on; the sample is
 * always checked (the estimate needs it). In `activity` (edited in place) a sandbox busy by CPU
 * is active now, and one idle by its logs whose usage was not read, or could not be, is unknown:
 * never idle. Returns the ids found busy.
 */
export async function checkUsage(c: UsageCheck): Promise<{ busy: Set<string> }> {
  const { activity, cooling, enough, spec, now, budget } = c;
  const below = spec.activity.usage?.cpuBelowPercent ?? 0;
  const idleByLogs: Sandbox[] = [];
  for (const [s, idleFor] of c.asked) {
    const at = activity.get(s.id);
    if (at !== undefined && now - at >= idleFor) idleByLogs.push(s);
  }
  const queue = usageOrder(idleByLogs, {
    held: heldStreaks(c.memory),
    sample: c.sample,
    cooling,
    activity,
  });
  const busy = new Set<string>();
  const checked = new Set<string>();
  let idleByBoth = 0;
  let requests = 0;
  let errors = 0;
  // Bounded by the queue: every pass takes at least one sandbox off it, or the loop ends.
  let part = queue.next(idleByBoth < enough);
  while (part.length > 0) {
    if (requests >= spec.activity.maxReadsPerRun || budget.clock() >= budget.until) break;
    requests++;
    let usage: Map<string, SandboxUsage> | undefined;
    try {
      usage = await c.platform.sandboxUsage(part.map((s) => s.id));
    } catch {
      errors++;
    }
    for (const s of part) {
      const u = usage?.get(s.id);
      if (u === undefined) continue;
      checked.add(s.id);
      if (u.cpuPct >= below) busy.add(s.id);
      else if (!cooling.has(s.id)) idleByBoth++;
    }
    part = queue.next(idleByBoth < enough);
  }
  for (const s of idleByLogs) {
    if (busy.has(s.id)) activity.set(s.id, now);
    else if (!checked.has(s.id)) activity.set(s.id, undefined);
  }
  c.metrics.usageReads.inc({ result: "ok" }, requests - errors);
  c.metrics.usageReads.inc({ result: "error" }, errors);
  return { busy };
}
