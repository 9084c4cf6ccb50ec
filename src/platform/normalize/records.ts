// One platform record -> one domain object: sandboxes (the hot path), nodes, templates, log entries.

import { epochMs, parseIsoTime } from "../../util/time.js";
import {
  type LogEntry,
  type PlatformNode,
  PROBE_TAG_KEY,
  type Sandbox,
  type Template,
} from "../types.js";
import { collectFields, EMPTY_NUMBERS, EMPTY_STRINGS, remember, shareIfSame } from "./collect.js";
import { type FieldSpec, type FieldTable, keyOf } from "./fields.js";
import type { Normalizer } from "./normalizer.js";
import {
  asRecord,
  isRecord,
  NormalizeError,
  readCpuCount,
  readMemoryMB,
  readNumber,
  readString,
  readTime,
} from "./values.js";

type Json = Record<string, unknown>;

/** Distinct state spellings remembered (raw -> lower-cased); states are few, the cap is a guard. */
const STATE_CACHE_LIMIT = 1024;
/**
 * Equal metadata maps and template ids shared across sandboxes (raw key -> one frozen copy): a
 * fleet has few distinct combinations, and 100,000 copies held per snapshot cost tens of MB.
 */
const SHARE_CACHE_LIMIT = 4096;

/**
 * Normalizes one sandbox record; `path` names it in errors (e.g. `sandboxes[3]`). `slim` skips
 * the unmapped fields (`extra`) and every metadata key but the probe tag: the compact snapshot
 * keeps neither, and churn tells the prober's own deletions apart by the tag.
 */
export function normalizeSandbox(
  n: Normalizer,
  raw: unknown,
  path = "sandbox",
  slim = false,
): Sandbox {
  if (!isRecord(raw)) throw new NormalizeError(path, "a sandbox object", raw);
  const t = n.sandbox;
  const f = t.fields;
  // The key walk comes first: it tells the field reads whether this record has the last one's keys.
  const extra = shareIfSame(t, collectFields(raw, t, undefined, false, !slim));
  const id = requiredId(raw, f.id, t, path, "sandbox");
  const templateId = intern(n.templateIds, str(raw, f.templateId, t, path) ?? "");
  const state = lowerState(n.states, str(raw, f.state, t, path));
  const cpuCount = num(raw, f.cpuCount, t, path, readCpuCount);
  const memoryMB = num(raw, f.memoryMB, t, path, readMemoryMB);
  const startedAt = time(raw, f.startedAt, t, path);
  const endAt = time(raw, f.endAt, t, path);
  const domain = str(raw, f.domain, t, path) || undefined;
  const metaRaw = f.metadata.read(raw, t);
  const metadata =
    metaRaw === undefined
      ? EMPTY_STRINGS
      : slim
        ? probeTagOnly(n.metadata, metaRaw)
        : shareMetadata(n.metadata, readMetadata(metaRaw, raw, f.metadata, path));
  // One object literal with every property, so all sandboxes share a single hidden class.
  return { id, templateId, state, cpuCount, memoryMB, startedAt, endAt, domain, metadata, extra };
}

/** Normalizes one node record: id, status, every numeric field, short string fields as info. */
export function normalizeNode(n: Normalizer, raw: unknown, path = "node"): PlatformNode {
  const obj = asRecord(raw, path);
  const t = n.node;
  const info: Record<string, string> = {};
  const numeric = fresh(collectFields(obj, t, info, false));
  const id = requiredId(obj, t.fields.id, t, path, "node");
  const status = lowerState(n.states, str(obj, t.fields.status, t, path));
  return { id, status, numeric, info };
}

/** Normalizes one template record: id, status, version, replicas, error, numeric and info fields. */
export function normalizeTemplate(n: Normalizer, raw: unknown, path = "template"): Template {
  const obj = asRecord(raw, path);
  const t = n.template;
  const f = t.fields;
  const info: Record<string, string> = {};
  const numeric = fresh(collectFields(obj, t, info, false));
  const id = requiredId(obj, f.id, t, path, "template");
  const status = lowerState(n.states, str(obj, f.status, t, path));
  const version = str(obj, f.version, t, path) || undefined;
  const replicas = num(obj, f.replicas, t, path, readNumber);
  const error = errorText(f.error.read(obj, t));
  return { id, status, version, replicas, error, numeric, info };
}

/** Normalizes one structured log entry; the record itself is kept as `raw`. */
export function normalizeLogEntry(n: Normalizer, raw: unknown, path = "log"): LogEntry {
  const obj = asRecord(raw, path);
  // Log entries are read without the key walk: the log table's shape stays 0, so no memo is used.
  const t = n.log;
  return {
    timestamp: time(obj, t.fields.timestamp, t, path),
    message: str(obj, t.fields.message, t, path),
    raw: obj,
  };
}

function requiredId(obj: Json, spec: FieldSpec, t: FieldTable, path: string, what: string): string {
  const v = spec.read(obj, t);
  if (typeof v === "string" && v !== "") return v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  throw new NormalizeError(
    `${path}.${keyOf(obj, spec.cands)}`,
    `a ${what} id (key ${spec.names})`,
    v,
  );
}

function str(obj: Json, spec: FieldSpec, t: FieldTable, path: string): string | undefined {
  const v = spec.read(obj, t);
  if (v === undefined || typeof v === "string") return v;
  return readString(v, `${path}.${keyOf(obj, spec.cands)}`);
}

function num(
  obj: Json,
  spec: FieldSpec,
  t: FieldTable,
  path: string,
  read: (v: unknown, path: string) => number,
): number | undefined {
  const v = spec.read(obj, t);
  if (v === undefined || (typeof v === "number" && Number.isFinite(v))) return v;
  return read(v, `${path}.${keyOf(obj, spec.cands)}`);
}

function time(obj: Json, spec: FieldSpec, t: FieldTable, path: string): number | undefined {
  const v = spec.read(obj, t);
  if (v === undefined) return undefined;
  if (typeof v === "string") {
    const ms = parseIsoTime(v);
    if (ms !== undefined) return ms > 0 ? ms : undefined;
  } else if (typeof v === "number" && Number.isFinite(v)) return epochMs(v);
  return readTime(v, `${path}.${keyOf(obj, spec.cands)}`);
}

function intern(cache: Map<string, string>, s: string): string {
  return remember(cache, s, SHARE_CACHE_LIMIT, itself);
}

/** One frozen map per distinct metadata content (pairs in record order). */
function shareMetadata(
  cache: Map<string, Record<string, string>>,
  m: Record<string, string>,
): Record<string, string> {
  if (m === EMPTY_STRINGS) return m;
  let key = "";
  for (const k in m) {
    const v = m[k] as string;
    // Length-prefixed, so no key or value can make two different maps collide.
    key += `${k.length}:${k}${v.length}:${v}`;
  }
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  if (cache.size >= SHARE_CACHE_LIMIT) cache.clear();
  const frozen = Object.freeze(m);
  cache.set(key, frozen);
  return frozen;
}

/**
 * The probe tag alone, as a shared map, else EMPTY_STRINGS. The rest of the metadata is not read,
 * so a slim walk costs one keyed load for it and fails on nothing it does not keep.
 */
function probeTagOnly(
  cache: Map<string, Record<string, string>>,
  v: unknown,
): Record<string, string> {
  let tag: unknown;
  if (isRecord(v)) tag = v[PROBE_TAG_KEY];
  else if (Array.isArray(v))
    for (const p of v)
      if (isRecord(p) && (p.key ?? p.name) === PROBE_TAG_KEY) {
        tag = p.value;
        break;
      }
  if (tag === undefined || tag === null) return EMPTY_STRINGS;
  return shareMetadata(cache, { [PROBE_TAG_KEY]: metadataText(tag) });
}

function lowerState(cache: Map<string, string>, s: string | undefined): string {
  if (s === undefined || s === "") return "unknown";
  return remember(cache, s, STATE_CACHE_LIMIT, lowerCased);
}

function lowerCased(s: string): string {
  return s.trim().toLowerCase() || "unknown";
}

function itself(s: string): string {
  return s;
}

/**
 * Metadata as a string map: an object (values coerced to text) or a list of `{key|name, value}`
 * pairs. An object of strings only is returned as it is: copying 100,000 of them per poll buys
 * nothing, since the parsed body is never mutated.
 */
function readMetadata(
  v: unknown,
  obj: Json,
  spec: FieldSpec,
  path: string,
): Record<string, string> {
  if (isRecord(v)) {
    let empty = true;
    for (const k in v) {
      empty = false;
      if (typeof v[k] !== "string" || k === "__proto__") return coerceMap(v);
    }
    return empty ? EMPTY_STRINGS : (v as Record<string, string>);
  }
  if (Array.isArray(v)) return pairsMap(v, `${path}.${keyOf(obj, spec.cands)}`);
  throw new NormalizeError(`${path}.${keyOf(obj, spec.cands)}`, "an object of strings", v);
}

function coerceMap(v: Json): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in v) {
    const x = v[k];
    // "__proto__" from JSON.parse is an own key; assigning it would re-prototype `out`.
    if (x === null || x === undefined || k === "__proto__") continue;
    out[k] = metadataText(x);
  }
  return out;
}

/** A metadata value as text: objects as JSON. */
function metadataText(x: unknown): string {
  return typeof x === "string" ? x : typeof x === "object" ? JSON.stringify(x) : String(x);
}

function pairsMap(list: unknown[], path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    const key = isRecord(p) ? (p.key ?? p.name) : undefined;
    if (typeof key !== "string" || !isRecord(p)) {
      throw new NormalizeError(`${path}[${i}]`, "a {key, value} pair", p);
    }
    const value = p.value;
    if (key === "__proto__" || value === null || value === undefined) continue;
    out[key] = typeof value === "string" ? value : String(value);
  }
  return out;
}

/** Error text from a string, an `{message}` object or a flag; undefined when there is none. */
function errorText(e: unknown): string | undefined {
  if (e === undefined || e === false || e === "" || e === 0) return undefined;
  if (typeof e === "string") return e;
  if (typeof e === "number" || typeof e === "boolean") return String(e);
  if (isRecord(e)) {
    const text = e.message ?? e.error ?? e.detail ?? e.reason;
    if (typeof text === "string" && text !== "") return text;
    const json = JSON.stringify(e);
    if (json === "{}") return undefined;
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  }
  if (Array.isArray(e)) return e.length === 0 ? undefined : errorText(e[0]);
  return undefined;
}

/** Node and template maps are per record and few: never hand out the shared frozen map. */
function fresh(numeric: Record<string, number>): Record<string, number> {
  return numeric === EMPTY_NUMBERS ? {} : numeric;
}
