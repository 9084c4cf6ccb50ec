// What the evaluator remembers between fresh snapshots: how long each rule's condition has held on
// each target (its streak), and when each (rule, target) was last acted on (the cooldown).
import { allRules, type PolicySpec } from "./policy-settings.js";

/** How long a rule's condition has held on a target. */
export interface Streak {
  readonly count: number;
  readonly since: number;
}

/** What the evaluator remembers between fresh snapshots. */
export interface PolicyMemory {
  /**
   * Rule -> id -> fresh snapshots in a row on which the condition held, and since when (by rule,
   * then id: a run at 100,000 snapshots keys no string per pair).
   */
  readonly streaks: ReadonlyMap<string, ReadonlyMap<string, Streak>>;
  /** `rule\0id` -> epoch ms of the last action (done or dry-run), for the cooldown. */
  readonly lastAction: ReadonlyMap<string, number>;
}

export const EMPTY_MEMORY: PolicyMemory = { streaks: new Map(), lastAction: new Map() };

/** The key of a (rule, target) pair in `lastAction`. */
export function pairKey(rule: string, id: string): string {
  return `${rule}\0${id}`;
}

/** The target id of a pairKey. */
export function idOfKey(key: string): string {
  return key.slice(key.indexOf("\0") + 1);
}

/**
 * The latest action on each id, by any rule. A cooldown leaves the sandbox (or snapshot) alone,
 * not only the rule: a second rule matching it must not act the run after the first did.
 */
export function lastActedById(memory: PolicyMemory): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, at] of memory.lastAction) {
    const id = idOfKey(key);
    if (at > (out.get(id) ?? Number.NEGATIVE_INFINITY)) out.set(id, at);
  }
  return out;
}

/** Drops cooldown entries that have run out (or whose rule is gone). */
export function pruneActions(memory: PolicyMemory, spec: PolicySpec, now: number) {
  const cooldowns = new Map(allRules(spec).map((r) => [r.name, r.cooldown]));
  const out = new Map<string, number>();
  for (const [key, at] of memory.lastAction) {
    const cooldown = cooldowns.get(key.slice(0, key.indexOf("\0")));
    if (cooldown !== undefined && now - at < cooldown) out.set(key, at);
  }
  return out;
}

/** Remembers the actions taken (done or dry-run) for the cooldown. */
export function recordActions(
  memory: PolicyMemory,
  acted: readonly { rule: string; id: string }[],
  now: number,
): PolicyMemory {
  const lastAction = new Map(memory.lastAction);
  for (const a of acted) lastAction.set(pairKey(a.rule, a.id), now);
  return { streaks: memory.streaks, lastAction };
}
