// Fields nobody mapped: numbers -> numeric maps (metrics), short strings -> info (labels).

import { isSecretKey } from "../../util/secrets.js";
import { epochMs, looksLikeIsoTime, parseIsoTime } from "../../util/time.js";
import type { FieldTable } from "./fields.js";
import { decimalNumber, looseKey, MAX_MAGNITUDE, MAX_TIME_MS, snakeCase } from "./values.js";

type Json = Record<string, unknown>;

/** Longest string kept as an info label value; longer text is not label material. */
const INFO_MAX_CHARS = 128;

/** What a key means to collectFields. */
export interface KeyInfo {
  /** snake_case name. */
  name: string;
  /** A timestamp field by convention (`createdAt`, `last_spawned_at`). */
  at: boolean;
  secret: boolean;
}
/** Distinct keys remembered per cache before it starts over (keys come from the wire). */
const KEY_CACHE_LIMIT = 4096;

/** What the wire keys a Normalizer has met mean, so each is worked out once, not per record. */
export class KeyNames {
  private readonly infos = new Map<string, KeyInfo>();
  private readonly looseForms = new Map<string, string>();

  /** The KeyInfo of a key. */
  info(key: string): KeyInfo {
    return remember(this.infos, key, KEY_CACHE_LIMIT, makeKeyInfo);
  }

  /** looseKey(key), remembered. */
  loose(key: string): string {
    return remember(this.looseForms, key, KEY_CACHE_LIMIT, looseKey);
  }
}

function makeKeyInfo(key: string): KeyInfo {
  const name = snakeCase(key);
  // No secret in a label: a key the secrets rule calls secret keeps only its numbers.
  return { name, at: name.endsWith("_at"), secret: isSecretKey(name) };
}

/**
 * The cached value of `key`, made by `make(key)` and kept on a miss. The cache starts over once it
 * holds `limit` entries: the values are few in practice (keys, states, templates), the limit is a
 * guard. `make` takes the key so callers can pass a function made once: a closure made per call
 * is two small objects per sandbox per poll, 20 MB of garbage a cycle at 100,000 sandboxes.
 */
export function remember<V>(
  cache: Map<string, V>,
  key: string,
  limit: number,
  make: (key: string) => V,
): V {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const value = make(key);
  if (cache.size >= limit) cache.clear();
  cache.set(key, value);
  return value;
}

/** Shared empty map: 100,000 sandboxes per snapshot mostly have no extra fields. */
export const EMPTY_NUMBERS: Record<string, number> = Object.freeze({}) as Record<string, number>;
/** Shared empty metadata: most sandboxes carry none. */
export const EMPTY_STRINGS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Keys of a record remembered by position; wider records are walked without the shortcut. */
const SHAPE_MAX_KEYS = 64;

/**
 * Walks the keys of a record once, and collects every field not claimed by the table: numbers
 * (and, with `numericStrings`, numeric text) go to the returned map under their snake_case name;
 * with `info`, short strings and booleans go there. Objects are flattened one level
 * (`metrics.cpuPct` -> `metrics_cpu_pct`; the table's `inline` objects without the prefix).
 * Timestamps (ISO text, or epoch numbers under an `..._at` key) become
 * `<name>_timestamp_seconds`, so a changing time never becomes a changing label. A number past
 * MAX_MAGNITUDE (or a time past MAX_TIME_MS) is left out and counted in `table.invalid`.
 * Also starts a new `table.shape` when the keys differ from the last record's, which tells the
 * field reads that follow which memos still hold. Returns EMPTY_NUMBERS when nothing numeric was
 * found; with `values` false, only the shape is read (for a caller that keeps no unmapped field).
 */
export function collectFields(
  obj: Json,
  table: FieldTable,
  info: Record<string, string> | undefined,
  numericStrings: boolean,
  values = true,
): Record<string, number> {
  const { keys, infos, names } = table;
  let same = table.shape !== 0;
  let numeric: Record<string, number> | undefined;
  let i = 0;
  for (const key in obj) {
    let k: KeyInfo | undefined;
    if (keys[i] === key) k = infos[i];
    else {
      same = false;
      k =
        table.claimed.has(key) || table.claimedLoose.has(names.loose(key))
          ? undefined
          : names.info(key);
      if (i < SHAPE_MAX_KEYS) {
        keys[i] = key;
        infos[i] = k;
      }
    }
    i++;
    if (k === undefined || !values) continue;
    const v = obj[key];
    if (v === null || v === undefined) continue;
    if (typeof v === "object") {
      if (Array.isArray(v) || k.secret) continue;
      const inline = table.inline.has(k.name);
      for (const inner in v as Json) {
        const iv = (v as Json)[inner];
        if (iv === null || typeof iv === "object") continue;
        const ik = names.info(inner);
        if (ik.secret) continue;
        if (inline) {
          // Beside the record's own fields: a mapped field's spelling or a top-level key wins.
          if (table.claimed.has(inner) || table.claimedLoose.has(names.loose(inner))) continue;
          if (inner in obj) continue;
        }
        const name = inline ? ik.name : `${k.name}_${ik.name}`;
        numeric = put(numeric, info, table, name, ik.at, iv, numericStrings);
      }
      continue;
    }
    if (!k.secret || typeof v === "number") {
      numeric = put(numeric, info, table, k.name, k.at, v, numericStrings);
    }
  }
  if (!same || i !== table.length || i > SHAPE_MAX_KEYS) table.shape++;
  table.length = i;
  return numeric ?? EMPTY_NUMBERS;
}

/**
 * The previous record's map when this one holds the same numbers, frozen so it can be shared:
 * fleets are uniform (every E2B sandbox has a `diskSizeMB`), and 100,000 identical small maps held
 * per snapshot are 100,000 objects for the garbage collector to copy.
 */
export function shareIfSame(
  table: FieldTable,
  numeric: Record<string, number>,
): Record<string, number> {
  if (numeric === EMPTY_NUMBERS) return numeric;
  const last = table.lastNumeric;
  if (last !== undefined) {
    let n = 0;
    let same = true;
    for (const k in numeric) {
      n++;
      if (last[k] !== numeric[k]) {
        same = false;
        break;
      }
    }
    if (same && n === table.lastNumericSize) return last;
    table.lastNumericSize = n;
  } else {
    let n = 0;
    for (const _ in numeric) n++;
    table.lastNumericSize = n;
  }
  table.lastNumeric = Object.freeze(numeric);
  return numeric;
}

function put(
  numeric: Record<string, number> | undefined,
  info: Record<string, string> | undefined,
  table: FieldTable,
  name: string,
  at: boolean,
  v: unknown,
  numericStrings: boolean,
): Record<string, number> | undefined {
  if (typeof v === "number") {
    if (!(Math.abs(v) <= MAX_MAGNITUDE)) {
      table.invalid.add(table.resource, name);
      return numeric;
    }
    const out = numeric ?? {};
    // Numbers under an `_at` key are epoch times only when plausibly so (after 2001).
    if (at && v >= 1e9) {
      const ms = epochMs(v) as number;
      if (ms > MAX_TIME_MS) {
        table.invalid.add(table.resource, name);
        return numeric;
      }
      out[`${name}_timestamp_seconds`] = ms / 1000;
    } else out[name] = v;
    return out;
  }
  if (typeof v === "boolean") {
    if (info) info[name] = v ? "true" : "false";
    return numeric;
  }
  if (typeof v !== "string" || v === "") return numeric;
  if (looksLikeIsoTime(v)) {
    const ms = parseIsoTime(v);
    if (ms !== undefined) {
      const out = numeric ?? {};
      if (ms > 0) out[`${name}_timestamp_seconds`] = ms / 1000;
      return out;
    }
  }
  if (numericStrings) {
    const n = decimalNumber(v);
    if (n !== undefined) return put(numeric, info, table, name, at, n, false);
    // A number in another notation ("0x10", "Infinity", "1e999") is an invalid value, not text.
    if (!Number.isNaN(Number(v)) && v.trim() !== "") {
      table.invalid.add(table.resource, name);
      return numeric;
    }
  }
  if (info && v.length <= INFO_MAX_CHARS) info[name] = v;
  return numeric;
}
