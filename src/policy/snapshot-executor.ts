// Applies a retention rule's "act" decision: reads the snapshot's details again where the platform
// serves them (a sandbox started from it since the list moves its last use), then deletes it by
// its snapshot id, once. Deleting a snapshot's template deletes every build made under its name.
import type { SnapshotFact } from "../collect/storage/snapshot-facts.js";
import { templateIdOf } from "../collect/storage/snapshot-facts.js";
import { PlatformHttpError, PlatformNotFoundError } from "../platform/http-errors.js";
import { errorMessage } from "../util/errors.js";
import type { SnapshotDecision } from "./evaluate.js";
import type { ActionOutcome, PolicyPlatform } from "./executor.js";
import type { SettledSnapshotRule } from "./policy-settings.js";
import { conditionsHold } from "./snapshot-rules.js";

/**
 * Applies one "act" decision about a snapshot. Dry-run and `log` make no call. A 404 (gone) is
 * skipped_gone; a 400 (E2B: a running or paused sandbox uses it) is skipped_in_use, not a failure,
 * and is not asked again this run.
 */
export async function applySnapshotDecision(
  d: SnapshotDecision,
  rule: SettledSnapshotRule,
  fact: SnapshotFact | undefined,
  ctx: { platform: PolicyPlatform; now: () => number },
): Promise<ActionOutcome> {
  if (d.dryRun) return { result: "dry_run" };
  if (rule.action === "log") return { result: "done" };
  if (fact?.createdAt !== undefined) {
    const changed = await recheck(rule, fact, ctx);
    if (changed) return changed;
  }
  try {
    await ctx.platform.deleteSnapshot(d.snapshotId);
    return { result: "done" };
  } catch (err) {
    if (err instanceof PlatformNotFoundError) return { result: "skipped_gone" };
    if (err instanceof PlatformHttpError && err.status === 400)
      return { result: "skipped_in_use", detail: `the platform refused: ${err.bodyExcerpt}` };
    return { result: "failed", detail: errorMessage(err) };
  }
}

/** The rule checked against the details read now; undefined when it still holds. */
async function recheck(
  rule: SettledSnapshotRule,
  fact: SnapshotFact,
  ctx: { platform: PolicyPlatform; now: () => number },
): Promise<ActionOutcome | undefined> {
  try {
    const fresh = await ctx.platform.snapshotDetail(templateIdOf(fact.id));
    if (conditionsHold(rule, { ...fact, ...fresh }, ctx.now()) === undefined)
      return { result: "skipped_changed", detail: "used since the list (its last spawn moved)" };
    return undefined;
  } catch (err) {
    if (err instanceof PlatformNotFoundError) return { result: "skipped_gone" };
    return { result: "skipped_unverified", detail: `re-read failed: ${errorMessage(err)}` };
  }
}
