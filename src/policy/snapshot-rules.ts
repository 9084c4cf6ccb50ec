// Retention rules (target: snapshot), the pure part: which snapshots a rule matches, the newest
// `keepLatest` of them that no rule may touch, and which meet olderThan / unusedFor. They share the
// sandbox rules' streaks, notice period, cooldown, caps per cycle and share limit (evaluate.ts).
import {
  bornAt,
  type SnapshotFact,
  templateIdOf,
  untagged,
} from "../collect/storage/snapshot-facts.js";
import { formatDuration, formatSpan } from "../util/duration.js";
import {
  blastRadiusStop,
  type Candidate,
  type DecisionOutcome,
  decideRule,
  type RuleContext,
  type SnapshotsInput,
} from "./evaluate.js";
import type { SettledSnapshotRule } from "./policy-settings.js";

/** Evaluates every snapshot rule; decisions, candidates and streaks join the run's. */
export function evaluateSnapshotRules(snapshots: SnapshotsInput, ctx: RuleContext): void {
  const rules = ctx.input.spec.snapshotRules;
  if (rules.length === 0) return;
  const all = [...snapshots.facts.values()];
  const matched = new Map(rules.map((r) => [r.name, all.filter((f) => namesMatch(r, f))]));
  const kept = keptByRules(rules, matched);
  for (const rule of rules) {
    const decide = (f: SnapshotFact, outcome: DecisionOutcome, reason: string, notice = false) =>
      ctx.cycle.decisions.push({
        target: "snapshot",
        rule: rule.name,
        action: rule.action,
        snapshotId: f.id,
        names: f.names,
        outcome,
        dryRun: rule.dryRun,
        reason,
        ...(notice ? { notice: true as const } : {}),
      });
    const items: Candidate<SnapshotFact>[] = [];
    let looked = 0;
    for (const f of matched.get(rule.name) ?? []) {
      const keptBy = kept.get(f.id);
      if (keptBy === undefined) looked++;
      const held = conditionsHold(rule, f, ctx.input.now);
      if (held === undefined) continue;
      // A snapshot is a template: its deletion takes every build made under its name.
      const why =
        rule.action === "delete" && f.names.length > 0
          ? `${held}; deleting it deletes every build of ${[...new Set(f.names.map(untagged))].join(", ")}`
          : held;
      if (keptBy !== undefined) decide(f, "skipped_protected", `${why}; ${keptBy}`);
      else if (snapshots.inUse.has(templateIdOf(f.id)))
        decide(f, "skipped_in_use", `${why}; a sandbox of this shard was started from it`);
      else items.push({ id: f.id, at: lastUse(f), why, item: f });
    }
    ctx.candidates[rule.name] = items.length;
    const stop = blastRadiusStop(rule.name, ctx.input, items.length, looked, "snapshots");
    decideRule(rule, items, stop, ctx, (c, outcome, reason, notice) =>
      decide(c.item, outcome, reason, notice),
    );
  }
}

/**
 * Snapshot id -> why no rule may touch it: it is among the newest `keepLatest` of a rule's
 * matches. Newest by created time; a snapshot whose created time is not known counts as newer
 * than any known one (it may be the newest), so it takes a kept place rather than free one.
 */
function keptByRules(
  rules: readonly SettledSnapshotRule[],
  matched: ReadonlyMap<string, SnapshotFact[]>,
): Map<string, string> {
  const kept = new Map<string, string>();
  for (const rule of rules) {
    const n = rule.keepLatest;
    if (n === undefined || n === 0) continue;
    // The list is newest first: a stable sort keeps its order among equal keys.
    const newest = [...(matched.get(rule.name) ?? [])].sort(
      (a, b) =>
        (b.createdAt ?? Number.POSITIVE_INFINITY) - (a.createdAt ?? Number.POSITIVE_INFINITY),
    );
    for (const f of newest.slice(0, n))
      if (!kept.has(f.id)) kept.set(f.id, `among the newest ${n} rule "${rule.name}" keeps`);
  }
  return kept;
}

/** When it was last of use: its last spawn, else its making (or first sight). */
function lastUse(f: SnapshotFact): number {
  return typeof f.lastSpawnedAt === "number" ? f.lastSpawnedAt : bornAt(f);
}

/**
 * `age 9d > 7d; unused 9d >= 3d` when every condition of the rule holds, else undefined. unusedFor
 * needs the platform's details (a snapshot whose use is not known is never unused); olderThan
 * counts from first seen where the platform gives no created time, which is never older.
 */
export function conditionsHold(
  rule: SettledSnapshotRule,
  f: SnapshotFact,
  now: number,
): string | undefined {
  const parts: string[] = [];
  if (rule.olderThan !== undefined) {
    const age = now - bornAt(f);
    if (age <= rule.olderThan) return undefined;
    const from = f.createdAt === undefined ? " (since first listed)" : "";
    parts.push(
      `age ${formatSpan(age, rule.olderThan, true)}${from} > ${formatDuration(rule.olderThan)}`,
    );
  }
  if (rule.unusedFor !== undefined) {
    if (f.createdAt === undefined || f.lastSpawnedAt === undefined) return undefined;
    const idle = now - lastUse(f);
    if (idle < rule.unusedFor) return undefined;
    const never = f.lastSpawnedAt === null ? " (never used)" : "";
    parts.push(
      `unused ${formatSpan(idle, rule.unusedFor)}${never} >= ${formatDuration(rule.unusedFor)}`,
    );
  }
  return parts.length > 0 ? parts.join("; ") : "matches";
}

/**
 * Whether one of the rule's globs matches one of the snapshot's names: as listed, without the tag,
 * and without the team prefix (`team/nightly:v2`, `team/nightly`, `nightly:v2`, `nightly`). A
 * snapshot without a name is matched only by a rule that names none.
 */
export function namesMatch(rule: SettledSnapshotRule, f: SnapshotFact): boolean {
  const globs = rule.match.names;
  if (globs === undefined) return true;
  const forms = new Set<string>();
  const tag = f.id.slice(templateIdOf(f.id).length);
  for (const name of f.names) {
    const bare = untagged(name);
    for (const n of [name, bare, `${bare}${tag}`]) {
      forms.add(n);
      forms.add(n.slice(n.indexOf("/") + 1));
    }
  }
  return globs.some((g) => {
    const re = globRegExp(g);
    return [...forms].some((n) => re.test(n));
  });
}

/** `*` any run of characters, `?` one; everything else literal. */
function globRegExp(glob: string): RegExp {
  const body = glob
    .split("")
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${body}$`);
}
