// Whole-cluster answers: the resource overview and the health check.

import type { ClusterOverview, Health } from "../types.js";
import { collectFields } from "./collect.js";
import type { Normalizer } from "./normalizer.js";
import { asRecord, isRecord } from "./values.js";

/** Health status of a 2xx answer whose body is not a health answer (an HTML page, say). */
export const UNKNOWN_HEALTH = "unknown";
const HEALTH_KEYS = ["status", "state", "health"] as const;
const HEALTH_FLAGS = ["healthy", "ok", "up"] as const;
// Any other word from a 2xx answer (ok, healthy, up, pass, ready, warn, degraded...) counts as up.
const DOWN_WORDS = new Set([
  "down",
  "unhealthy",
  "fail",
  "failed",
  "failing",
  "error",
  "critical",
  "unavailable",
  "out_of_service",
  "false",
  // The platform's own "unknown" means what ours does: not known to be up.
  UNKNOWN_HEALTH,
]);
/** A plain-text body longer than this (an HTML page, a stack trace) is not a status word. */
const STATUS_WORD_MAX = 32;

/** Every numeric field of the cluster overview (numeric text included), snake_cased, one level flattened. */
export function normalizeOverview(n: Normalizer, raw: unknown): ClusterOverview {
  return {
    numeric: { ...collectFields(asRecord(raw, "overview"), n.overview, undefined, true) },
  };
}

/**
 * Up when the status is 2xx and the body is empty (E2B answers 204) or says so: a
 * `status|state|health` word (ok|healthy|up|pass|ready vs down|unhealthy|fail|error...), a
 * `healthy|ok|up` flag, or a plain text body such as "OK". A 2xx body that is none of these (an
 * HTML page, JSON without a status) is status `unknown`, which is not up: a login page of a proxy
 * in front of a dead platform must not read as healthy. `scrub` cleans the text a status word is
 * made from (the word becomes a label value).
 */
export function normalizeHealth(
  status: number,
  body: unknown,
  scrub: (text: string) => string = same,
): Health {
  const ok = status >= 200 && status < 300;
  const word = healthWord(body, scrub);
  if (word === undefined) {
    if (ok && !isEmpty(body)) return { up: false, status: UNKNOWN_HEALTH };
    return { up: ok };
  }
  return { up: ok && !DOWN_WORDS.has(word), status: word };
}

function isEmpty(body: unknown): boolean {
  return body === undefined || (typeof body === "string" && body.trim() === "");
}

function healthWord(body: unknown, scrub: (text: string) => string): string | undefined {
  if (typeof body === "string") return shortWord(scrub(body));
  if (typeof body === "boolean") return body ? "true" : "false";
  if (!isRecord(body)) return undefined;
  for (const key of HEALTH_KEYS) {
    const v = body[key];
    if (typeof v === "string") return shortWord(scrub(v));
    if (typeof v === "boolean") return v ? "up" : "down";
    // Spring-style nesting: {"health": {"status": "UP"}}.
    if (isRecord(v) && typeof v.status === "string") return shortWord(scrub(v.status));
  }
  for (const key of HEALTH_FLAGS) {
    const v = body[key];
    if (typeof v === "boolean") return v ? "up" : "down";
  }
  return undefined;
}

function shortWord(text: string): string | undefined {
  const w = text.trim().toLowerCase();
  if (w === "" || w.length > STATUS_WORD_MAX || /\s{2,}|[\r\n<]/.test(w)) return undefined;
  return w.replace(/[\s-]+/g, "_");
}

function same(text: string): string {
  return text;
}
