// Whole-cluster answers: the resource overview and the health check.
import { collectFields } from "./normalize-collect.js";
import { openTable } from "./normalize-fields.js";
import { asRecord, isRecord } from "./normalize-values.js";
import type { ClusterOverview, Health } from "./types.js";

const OVERVIEW_TABLE = openTable();
const HEALTH_KEYS = ["status", "state", "health"] as const;
const HEALTH_FLAGS = ["healthy", "ok", "up"] as const;
// Anything else from a 2xx answer (ok, healthy, up, pass, ready, warn, degraded...) counts as up.
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
]);
/** A plain-text body longer than this (an HTML page, a stack trace) is not a status word. */
const STATUS_WORD_MAX = 32;

/** Every numeric field of the cluster overview (numeric text included), snake_cased, one level flattened. */
export function normalizeOverview(raw: unknown): ClusterOverview {
  return {
    numeric: { ...collectFields(asRecord(raw, "overview"), OVERVIEW_TABLE, undefined, true) },
  };
}

/**
 * Up when the status is 2xx and the body does not say otherwise: a `status|state|health` word
 * (ok|healthy|up|pass|ready vs down|unhealthy|fail|error...), a `healthy|ok|up` flag, or a plain
 * text body such as "OK". An empty body (E2B answers 204) is up.
 */
export function normalizeHealth(status: number, body: unknown): Health {
  const ok = status >= 200 && status < 300;
  const word = healthWord(body);
  const up = ok && (word === undefined || !DOWN_WORDS.has(word));
  return word === undefined ? { up } : { up, status: word };
}

function healthWord(body: unknown): string | undefined {
  if (typeof body === "string") return shortWord(body);
  if (typeof body === "boolean") return body ? "true" : "false";
  if (!isRecord(body)) return undefined;
  for (const key of HEALTH_KEYS) {
    const v = body[key];
    if (typeof v === "string") return shortWord(v);
    if (typeof v === "boolean") return v ? "up" : "down";
    // Spring-style nesting: {"health": {"status": "UP"}}.
    if (isRecord(v) && typeof v.status === "string") return shortWord(v.status);
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
