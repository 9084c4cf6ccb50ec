// The engine's side of the retention rules: whether a run may evaluate them (the snapshot list is
// whole and fresh on this shard), and what they are evaluated on.
import type { Snapshot } from "../collect/snapshot.js";
import { staleAt } from "../collect/snapshot.js";
import type { Sandbox } from "../platform/types.js";
import type { SnapshotsInput } from "./evaluate.js";
import type { PolicySpec } from "./policy-settings.js";

/** How the retention rules stood in a run. */
export type SnapshotRulesState =
  /** Evaluated on a whole, fresh snapshot list. */
  | "evaluated"
  /** Held: no complete list yet, or the storage read failed or is stale. */
  | "blocked"
  /** This instance does not read the snapshots (another shard does). */
  | "elsewhere"
  /** The platform serves no snapshot list. */
  | "unsupported";

/**
 * What the retention rules of `spec` are evaluated on this run, or why they are not; undefined
 * when the spec has none.
 */
export function retentionInput(
  spec: PolicySpec,
  snapshot: Snapshot,
  own: readonly Sandbox[],
  now: number,
): { state: SnapshotRulesState; input?: SnapshotsInput } | undefined {
  if (spec.snapshotRules.length === 0) return undefined;
  const status = snapshot.collectors.storage;
  if (status === undefined || status.skipped) return { state: "elsewhere" };
  if (status.unsupported) return { state: "unsupported" };
  const storage = snapshot.storage;
  const whole = storage?.facts !== undefined && storage.snapshots?.complete === true;
  if (!whole || !status.success || staleAt(status, now)) return { state: "blocked" };
  // A sandbox started from a snapshot names its template: E2B refuses to delete it (a 400), and
  // the rules leave it alone before asking.
  const inUse = new Set(own.map((s) => s.templateId));
  return { state: "evaluated", input: { facts: storage.facts!, inUse } };
}
