// One platform record -> one domain object: sandboxes (the hot path), nodes, templates, log entries.

import {
  type LogEntry,
  type PlatformNode,
  PROBE_TAG_KEY,
  type Sandbox,
  type Template,
} from "../types.js";
import { collectFields, EMPTY_NUMBERS, EMPTY_STRINGS, remember, shareIfSame } from "./collect.js";
import { type FieldSpec, type FieldTable, keyOf } from "./fields.js";
import { RECORD_FIELD } from "./invalid-values.js";
import type { Normalizer } from "./normalizer.js";
import {
  isRecord,
  MAX_CPUS,
  MAX_MAGNITUDE,
  MAX_MEMORY_MB,
  parseCpuCount,
  parseMemoryMB,
  parseNumber,
  parseTime,
  UntrackableRecordError,
} from "./values.js";

type Json = Record<string, unknown>;

/** Distinct state spellings remembered (raw -> lower-cased); states are few, the cap is a guard. */
const STATE_CACHE_LIMIT = 1024;
/**
 * Equal metadata maps and template ids shared across sandboxes (raw key -> one frozen copy): a
 * fleet has few distinct combinations, and 100,000 copies held per snapshot cost tens of MB.
 */
const SHARE_CACHE_LIMIT = 4096;

/** Largest template replica count accepted. */
const MAX_REPLICAS = 1e9;

/**
 * Normalizes one sandbox record; `path` names it in errors (e.g. `sandboxes[3]`). `slim` skips
 * the unmapped fields (`extra`) and every metadata key but the probe tag: the compact snapshot
 * keeps neither, and churn tells the prober's own deletions apart by the tag. Only the id is
 * required (UntrackableRecordError); any other field that does not parse or is out of range is
 * read as absent and counted in `n.invalid`.
 */
export function normalizeSandbox(
  n: Normalizer,
  raw: unknown,
  path = "sandbox",
  slim = false,
): Sandbox {
  const t = n.sandbox;
  if (!isRecord(raw)) throw notRecord(t, path, raw);
  const f = t.fields;
  // The key walk comes first: it tells the field reads whether this record has the last one's keys.
  const extra = shareIfSame(t, collectFields(raw, t, undefined, false, !slim));
  const id = requiredId(raw, f.id, t, path, "sandbox");
  const templateId = intern(n.templateIds, str(raw, f.templateId, t) ?? "");
  const state = lowerState(n.states, str(raw, f.state, t));
  const cpuCount = num(raw, f.cpuCount, t, parseCpuCount, MAX_CPUS);
  const memoryMB = num(raw, f.memoryMB, t, parseMemoryMB, MAX_MEMORY_MB);
  const startedAt = time(raw, f.startedAt, t);
  const endAt = time(raw, f.endAt, t);
  const domain = str(raw, f.domain, t) || undefined;
  const metaRaw = f.metadata.read(raw, t);
  const metadata =
    metaRaw === undefined
      ? EMPTY_STRINGS
      : slim
        ? probeTagOnly(n.metadata, metaRaw)
        : shareMetadata(n.metadata, readMetadata(metaRaw, f.metadata, t));
  // One object literal with every property, so all sandboxes share a single hidden class.
  return { id, templateId, state, cpuCount, memoryMB, startedAt, endAt, domain, metadata, extra };
}

/**
 * A sandbox list item, normalized only when `keep` accepts its id: the shard is applied at the
 * list, so another shard's record costs one id read and is never kept. An item without a
 * readable id goes through normalizeSandbox, which leaves it out and counts it.
 */
export function normalizeSandboxIf(
  n: Normalizer,
  raw: unknown,
  path: string,
  slim: boolean,
  keep: (id: string) => boolean,
): Sandbox | undefined {
  if (isRecord(raw)) {
    const v = n.sandbox.fields.id.peek(raw, n.sandbox);
    const id =
      typeof v === "string" ? v : typeof v === "number" && Number.isFinite(v) ? String(v) : "";
    if (id !== "" && !keep(id)) return undefined;
  }
  return normalizeSandbox(n, raw, path, slim);
}

/** Normalizes one node record: id, status, every numeric field, short string fields as info. */
export function normalizeNode(n: Normalizer, raw: unknown, path = "node"): PlatformNode {
  const t = n.node;
  if (!isRecord(raw)) throw notRecord(t, path, raw);
  const obj = raw;
  const info: Record<string, string> = {};
  const numeric = fresh(collectFields(obj, t, info, false));
  const id = requiredId(obj, t.fields.id, t, path, "node");
  const status = lowerState(n.states, str(obj, t.fields.status, t));
  return { id, status, numeric, info };
}

/** Normalizes one template record: id, status, version, replicas, error, numeric and info fields. */
export function normalizeTemplate(n: Normalizer, raw: unknown, path = "template"): Template {
  const t = n.template;
  if (!isRecord(raw)) throw notRecord(t, path, raw);
  const obj = raw;
  const f = t.fields;
  const info: Record<string, string> = {};
  const numeric = fresh(collectFields(obj, t, info, false));
  const id = requiredId(obj, f.id, t, path, "template");
  const status = lowerState(n.states, str(obj, f.status, t));
  const version = str(obj, f.version, t) || undefined;
  const replicas = num(obj, f.replicas, t, parseNumber, MAX_REPLICAS, 0);
  const error = errorText(f.error.read(obj, t));
  return { id, status, version, replicas, error, numeric, info };
}

/** Normalizes one structured log entry (no field required); the record itself is kept as `raw`. */
export function normalizeLogEntry(n: Normalizer, raw: unknown, path = "log"): LogEntry {
  // Log entries are read without the key walk: the log table's shape stays 0, so no memo is used.
  const t = n.log;
  if (!isRecord(raw)) throw notRecord(t, path, raw);
  return {
    timestamp: time(raw, t.fields.timestamp, t),
    message: str(raw, t.fields.message, t),
    raw,
  };
}

function notRecord(t: FieldTable, path: string, raw: unknown): UntrackableRecordError {
  return new UntrackableRecordError(path, `a ${t.resource} object`, raw, t.resource, RECORD_FIELD);
}

function requiredId(obj: Json, spec: FieldSpec, t: FieldTable, path: string, what: string): string {
  const v = spec.read(obj, t);
  if (typeof v === "string" && v !== "") return v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  throw new UntrackableRecordError(
    `${path}.${keyOf(obj, spec.cands)}`,
    `a ${what} id (key ${spec.names})`,
    v,
    t.resource,
    spec.label,
  );
}

/** Counts a value of `spec` that did not parse or was out of range; it is read as absent. */
function dropped(t: FieldTable, spec: FieldSpec): undefined {
  t.invalid.add(t.resource, spec.label);
  return undefined;
}

function str(obj: Json, spec: FieldSpec, t: FieldTable): string | undefined {
  const v = spec.read(obj, t);
  if (v === undefined || typeof v === "string") return v;
  if (typeof v === "boolean" || (typeof v === "number" && Math.abs(v) <= MAX_MAGNITUDE))
    return String(v);
  return dropped(t, spec);
}

/** A number within [min, max] (min defaults to -max: negative cpu and memory are counted later). */
function num(
  obj: Json,
  spec: FieldSpec,
  t: FieldTable,
  parse: (v: unknown) => number | undefined,
  max: number,
  min = -max,
): number | undefined {
  const v = spec.read(obj, t);
  if (v === undefined) return undefined;
  const x = typeof v === "number" ? v : parse(v);
  // NaN and ±Infinity fail the comparison too.
  if (x !== undefined && x >= min && x <= max) return x;
  return dropped(t, spec);
}

function time(obj: Json, spec: FieldSpec, t: FieldTable): number | undefined {
  const v = spec.read(obj, t);
  if (v === undefined) return undefined;
  const ms = parseTime(v);
  return ms !== undefined && Number.isNaN(ms) ? dropped(t, spec) : ms;
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
function readMetadata(v: unknown, spec: FieldSpec, t: FieldTable): Record<string, string> {
  if (isRecord(v)) {
    let empty = true;
    for (const k in v) {
      empty = false;
      if (typeof v[k] !== "string" || k === "__proto__") return coerceMap(v);
    }
    return empty ? EMPTY_STRINGS : (v as Record<string, string>);
  }
  const pairs = Array.isArray(v) ? pairsMap(v) : undefined;
  return pairs ?? dropped(t, spec) ?? EMPTY_STRINGS;
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

/** `[{key|name, value}]` as a map; undefined when an item is no such pair. */
function pairsMap(list: unknown[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i++) {
    const p = list[i];
    const key = isRecord(p) ? (p.key ?? p.name) : undefined;
    if (typeof key !== "string" || !isRecord(p)) return undefined;
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
