// The cheap, pure tests of a rule against one sandbox: state, template, metadata, protection, age.

import type { Sandbox } from "../platform/types.js";
import { PROBE_TAG_KEY } from "../platform/types.js";
import { epochMs, parseIsoTime } from "../util/time.js";
import type { MetadataSelector, PolicyRule, PolicySpec } from "./policy-settings.js";

// activity.ts reads its epoch numbers through here.
export { epochMs };

/** What the policy needs to know about state names. */
export interface StateSets {
  running: ReadonlySet<string>;
  /** State names that read as paused (a pausedFor rule matches these only). */
  paused: ReadonlySet<string>;
}

/** Whether one selector holds for the metadata. */
export function selectorHolds(s: MetadataSelector, metadata: Record<string, string>): boolean {
  const has = Object.hasOwn(metadata, s.key);
  const v = metadata[s.key];
  switch (s.op) {
    case "=":
      return v === s.value;
    case "!=":
      return v !== s.value;
    case "in":
      return v !== undefined && s.values.includes(v);
    case "notin":
      return v === undefined || !s.values.includes(v);
    case "exists":
      return has;
    case "!exists":
      return !has;
  }
}

/**
 * Whether the protect label shields the sandbox at `now`. The value `until=<time>` lapses at that
 * time; any other value but "false" protects, and so does an `until=` that does not parse.
 */
export function isProtected(
  metadata: Record<string, string>,
  label: PolicySpec["protectLabel"],
  now: number,
): boolean {
  const v = metadata[label.key];
  if (v === undefined) return false;
  if (v === label.value) return true;
  if (v.startsWith("until=")) {
    const until = parseTime(v.slice("until=".length));
    return until === undefined || now < until;
  }
  return v.toLowerCase() !== "false";
}

/**
 * Epoch ms from ISO-8601 text (a time without a zone is UTC) or an epoch number in s, ms, us or
 * ns; undefined when it does not parse.
 */
export function parseTime(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return epochMs(Number(t));
  return parseIsoTime(t);
}

/**
 * The rule's `match`: state, template, metadata selectors. A pause rule only ever matches running
 * sandboxes; probe sandboxes never match. The blast-radius share is taken of these.
 */
export function selectorMatch(rule: PolicyRule, s: Sandbox, states: StateSets): boolean {
  // Probe sandboxes belong to the prober, never to a rule.
  if (Object.hasOwn(s.metadata, PROBE_TAG_KEY)) return false;
  const m = rule.match;
  if (m.states && !m.states.some((x) => x.toLowerCase() === s.state)) return false;
  if (rule.action === "pause" && !states.running.has(s.state)) return false;
  if (rule.pausedFor !== undefined && !states.paused.has(s.state)) return false;
  if (m.templates && !m.templates.includes(s.templateId)) return false;
  if (m.metadata && !m.metadata.every((sel) => selectorHolds(sel, s.metadata))) return false;
  return true;
}

/** minAge and maxAge; a sandbox without a start time fails an age condition. */
export function ageHolds(rule: PolicyRule, s: Sandbox, now: number): boolean {
  if (rule.minAge === undefined && rule.maxAge === undefined) return true;
  if (s.startedAt === undefined) return false;
  const age = now - s.startedAt;
  if (rule.minAge !== undefined && age < rule.minAge) return false;
  if (rule.maxAge !== undefined && age <= rule.maxAge) return false;
  return true;
}

/** Everything but the idle condition: no platform call needed. */
export function cheapMatch(rule: PolicyRule, s: Sandbox, states: StateSets, now: number): boolean {
  return selectorMatch(rule, s, states) && ageHolds(rule, s, now);
}

/** Whether the idle condition holds, given the last activity (undefined: unknown, never idle). */
export function idleHolds(
  rule: PolicyRule,
  lastActivity: number | undefined,
  now: number,
): boolean {
  if (rule.idleFor === undefined) return true;
  return lastActivity !== undefined && now - lastActivity >= rule.idleFor;
}

/**
 * Whether the pause condition holds, given when the sandbox was paused (undefined: not known to be
 * paused, never held).
 */
export function pausedHolds(rule: PolicyRule, pausedAt: number | undefined, now: number): boolean {
  if (rule.pausedFor === undefined) return true;
  return pausedAt !== undefined && now - pausedAt >= rule.pausedFor;
}
