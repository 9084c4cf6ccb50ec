// Small facts of a policy run: how old its data is, what an outcome acted on, and the walk's
// sandboxes without those found gone since.
import type { Snapshot } from "../collect/snapshot.js";
import type { Sandbox } from "../platform/types.js";
import type { PolicyDecision, SandboxDecision } from "./evaluate.js";
import type { PolicyOutcome } from "./policy-run.js";

/**
 * Epoch ms the oldest data a run acts on was read: the walk's start (its first pages are as old
 * as that) and, when it succeeded, the health read's. Nothing else in the snapshot (an unsupported
 * collector's outcome, one still reading) ages it.
 */
export function dataReadAt(s: Snapshot): number {
  const { sandboxes, health } = s.collectors;
  return Math.min(sandboxes.lastAttemptAt, health.success ? health.lastAttemptAt : Infinity);
}

export function isSandboxDecision(d: PolicyDecision): d is SandboxDecision {
  return d.target !== "snapshot";
}

/** The (rule, id) of an outcome, for the cooldown: a sandbox's or a snapshot's id. */
export function targetOf(o: PolicyOutcome): { rule: string; id: string } {
  return { rule: o.rule, id: o.target === "snapshot" ? o.snapshotId : o.sandboxId };
}

/** The walk's sandboxes and the rules' samples without those found gone since the walk. */
export function withoutGone(
  own: readonly Sandbox[],
  samples: ReadonlyMap<string, Sandbox[]>,
  gone: ReadonlySet<string>,
): { own: Sandbox[]; samples: Map<string, Sandbox[]> } {
  const kept = (list: readonly Sandbox[]) => list.filter((s) => !gone.has(s.id));
  return {
    own: kept(own),
    samples: new Map([...samples].map(([rule, list]) => [rule, kept(list)])),
  };
}
