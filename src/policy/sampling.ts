// The blast-radius estimate: per idle rule, a uniform random sample of what it looks at, the idle
// share of that sample, and the upper bound of its 95 % Wilson score interval.

import type { Sandbox } from "../platform/types.js";
import type { Activity } from "./activity.js";
import type { IdleEstimate } from "./evaluate.js";
import {
  ageHolds,
  cheapMatch,
  idleHolds,
  isProtected,
  type StateSets,
  selectorMatch,
} from "./match.js";
import type { PolicySpec, SettledRule } from "./policy-settings.js";

/**
 * Per idle rule, a random sample of the sandboxes it looks at (selected, not protected), read
 * fresh: the blast-radius guard needs the idle share without reading every candidate.
 */
export function sampleRules(
  spec: PolicySpec,
  own: readonly Sandbox[],
  states: StateSets,
  now: number,
  random: () => number,
): Map<string, Sandbox[]> {
  const out = new Map<string, Sandbox[]>();
  const size = spec.activity.sampleSize;
  for (const rule of spec.rules) {
    if (rule.idleFor === undefined) continue;
    const looked = own.filter(
      (s) => selectorMatch(rule, s, states) && !isProtected(s.metadata, spec.protectLabel, now),
    );
    // A partial Fisher-Yates shuffle: the first `size` places hold a uniform sample.
    const n = Math.min(size, looked.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(random() * (looked.length - i));
      [looked[i], looked[j]] = [looked[j] as Sandbox, looked[i] as Sandbox];
    }
    out.set(rule.name, looked.slice(0, n));
  }
  return out;
}

/**
 * The idle share of each sample and the upper bound of its 95 % Wilson interval. A sampled
 * sandbox whose read failed counts as idle here: a failing signal must stop a rule, not hide.
 */
export function estimateIdle(
  spec: PolicySpec,
  samples: ReadonlyMap<string, Sandbox[]>,
  activity: ReadonlyMap<string, Activity>,
  now: number,
  busyByUsage: ReadonlySet<string> = new Set(),
): Map<string, IdleEstimate> {
  const out = new Map<string, IdleEstimate>();
  for (const rule of spec.rules) {
    const sample = samples.get(rule.name);
    if (!sample || sample.length === 0) continue;
    let idle = 0;
    for (const s of sample) {
      const a = activity.get(s.id);
      if (!ageHolds(rule, s, now) || busyByUsage.has(s.id)) continue;
      if (a === undefined || idleHolds(rule, a.at, now)) idle++;
    }
    out.set(rule.name, {
      sampled: sample.length,
      idle,
      upperPercent: wilsonUpper(idle, sample.length) * 100,
    });
  }
  return out;
}

/** Upper bound of the 95 % Wilson score interval of `k` successes in `n` trials. */
export function wilsonUpper(k: number, n: number): number {
  if (n === 0) return 1;
  const z = 1.959964;
  const p = k / n;
  const z2n = (z * z) / n;
  const centre = p + z2n / 2;
  const spread = z * Math.sqrt((p * (1 - p)) / n + z2n / (4 * n));
  return Math.min(1, (centre + spread) / (1 + z2n));
}

/** Sandbox -> the shortest idleFor asked of it, over rules whose cheap filters it passes. */
export function idleAsked(
  spec: PolicySpec,
  own: readonly Sandbox[],
  states: StateSets,
  now: number,
): Map<Sandbox, number> {
  const asked = new Map<Sandbox, number>();
  const idleRules = spec.rules.filter(
    (r): r is SettledRule & { idleFor: number } => r.idleFor !== undefined,
  );
  if (idleRules.length === 0) return asked;
  for (const s of own) {
    for (const r of idleRules) {
      if (!cheapMatch(r, s, states, now)) continue;
      const prev = asked.get(s);
      if (prev === undefined || r.idleFor < prev) asked.set(s, r.idleFor);
    }
  }
  return asked;
}
