// E2B's team capacity answers: TeamMetric points (GET /teams/{teamID}/metrics), MaxTeamMetric
// (GET /teams/{teamID}/metrics/max), and the text of the 429 a create gets at the team's limit.
import { type InvalidValues, RECORD_FIELD } from "./invalid-values.js";
import { sampleTime } from "./usage.js";
import { isRecord, NormalizeError, parseNumber } from "./values.js";

const RESOURCE = "team_metrics";
/** Largest count or rate accepted: far above any team, below what a broken field sends. */
const MAX_VALUE = 1e9;

/** The metrics /metrics/max answers for (E2B's `metric` enum). */
export const TEAM_METRIC_NAMES = ["concurrent_sandboxes", "sandbox_start_rate"] as const;
export type TeamMetricName = (typeof TEAM_METRIC_NAMES)[number];

/** One TeamMetric: the team's concurrent sandboxes and start rate at a time. */
export interface TeamMetricPoint {
  /** Epoch ms (E2B: `timestampUnix` seconds, else the deprecated ISO `timestamp`). */
  at: number;
  concurrentSandboxes: number;
  /** Sandboxes started per second. */
  startRate: number;
}

/** A MaxTeamMetric: the highest value of one metric in the interval asked, and when. */
export interface TeamMetricMax {
  value: number;
  /** Epoch ms of the maximum, when the answer carries a time. */
  at?: number;
}

/**
 * A list of TeamMetric, oldest first. An empty list is no data (self-hosted installs answer `[]`),
 * never a 0. A point without a time or with a count or rate that does not parse (or is negative)
 * is left out and counted in `invalid`; a body that is not a list is a NormalizeError.
 */
export function normalizeTeamMetrics(body: unknown, invalid?: InvalidValues): TeamMetricPoint[] {
  if (!Array.isArray(body)) throw new NormalizeError("body", "a list of team metrics", body);
  const out: TeamMetricPoint[] = [];
  for (const raw of body) {
    const p = teamMetricPoint(raw, invalid);
    if (p !== undefined) out.push(p);
  }
  return out.sort((a, b) => a.at - b.at);
}

/** One MaxTeamMetric; a body without a number `value` is a NormalizeError. */
export function normalizeTeamMetricMax(body: unknown): TeamMetricMax {
  if (!isRecord(body)) throw new NormalizeError("body", "a MaxTeamMetric object", body);
  const value = count(body.value);
  if (value === undefined) throw new NormalizeError("body.value", "a number >= 0", body.value);
  const at = sampleTime(body);
  return at === undefined ? { value } : { value, at };
}

function teamMetricPoint(raw: unknown, invalid?: InvalidValues): TeamMetricPoint | undefined {
  if (!isRecord(raw)) return drop(invalid, RECORD_FIELD);
  const at = sampleTime(raw);
  if (at === undefined) return drop(invalid, "timestamp");
  const concurrentSandboxes = count(raw.concurrentSandboxes);
  if (concurrentSandboxes === undefined) return drop(invalid, "concurrent_sandboxes");
  const startRate = count(raw.sandboxStartRate);
  if (startRate === undefined) return drop(invalid, "sandbox_start_rate");
  return { at, concurrentSandboxes, startRate };
}

function count(v: unknown): number | undefined {
  const x = v === null ? undefined : parseNumber(v);
  return x !== undefined && x >= 0 && x <= MAX_VALUE ? x : undefined;
}

function drop(invalid: InvalidValues | undefined, field: string): undefined {
  invalid?.add(RESOURCE, field);
  return undefined;
}

/** Why the platform refused a create with 429 (the `reason` of create_rejected_total). */
export const CREATE_REJECT_REASONS = ["concurrency_limit", "rate_limit", "other"] as const;
export type CreateRejectReason = (typeof CREATE_REJECT_REASONS)[number];

/** Largest concurrency limit a 429's text is believed to name: far above any team's. */
export const MAX_TEAM_CONCURRENCY_LIMIT = 1_000_000;
/** Most characters of an out-of-range limit kept to report it. */
const IGNORED_LIMIT_CHARS = 32;

/**
 * E2B: "you have reached the maximum number of concurrent E2B sandboxes (20). If you need more,
 * ..." (packages/api/internal/orchestrator/create_instance.go).
 */
const CONCURRENCY_TEXT = /maximum number of concurrent (?:e2b )?sandboxes(?: \(([^)]*)\))?/i;
/** E2B's per-team route limiter answers "Rate limit exceeded" (api/internal/middleware/ratelimit). */
const RATE_TEXT = /rate[ -]?limit|too many requests/i;

/** Why a create got 429, the concurrency limit it names, or what it named that is no limit. */
export interface CreateRejection {
  reason: CreateRejectReason;
  /** An integer from 1 to MAX_TEAM_CONCURRENCY_LIMIT. */
  limit?: number;
  /** What the text named in the limit's place that is not such an integer (cut short). */
  ignoredLimit?: string;
}

/**
 * The reason of a create's 429 from its body text, and the limit it names: an integer in
 * [1, MAX_TEAM_CONCURRENCY_LIMIT], else `ignoredLimit` (a limit of 10^12 would be exported and
 * silence the near-limit alert).
 */
export function classifyCreateRejection(text: string): CreateRejection {
  const c = CONCURRENCY_TEXT.exec(text);
  if (c) {
    const named = c[1]?.trim();
    if (named === undefined) return { reason: "concurrency_limit" };
    const limit = /^\d{1,7}$/.test(named) ? Number(named) : Number.NaN;
    return limit >= 1 && limit <= MAX_TEAM_CONCURRENCY_LIMIT
      ? { reason: "concurrency_limit", limit }
      : { reason: "concurrency_limit", ignoredLimit: named.slice(0, IGNORED_LIMIT_CHARS) };
  }
  return { reason: RATE_TEXT.test(text) ? "rate_limit" : "other" };
}
