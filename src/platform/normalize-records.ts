// One platform record -> one domain object: sandboxes (the hot path), nodes, templates, log entries.
import {
  collectFields,
  EMPTY_NUMBERS,
  EMPTY_STRINGS,
  remember,
  shareIfSame,
} from "./normalize-collect.js";
import { type FieldMap, type FieldSpec, fieldTable, keyOf } from "./normalize-fields.js";
import {
  asRecord,
  epochMs,
  isRecord,
  NormalizeError,
  parseIsoTime,
  readCpuCount,
  readMemoryMB,
  readNumber,
  readString,
  readTime,
} from "./normalize-values.js";
import type { LogEntry, PlatformNode, Sandbox, Template } from "./types.js";

type Json = Record<string, unknown>;

/** Distinct state spellings remembered (raw -> lower-cased); states are few, the cap is a guard. */
const STATE_CACHE_LIMIT = 1024;
const stateCache = new Map<string, string>();
/**
 * Equal metadata maps and template ids shared across sandboxes (raw key -> one frozen copy): a
 * fleet has few distinct combinations, and 100,000 copies held per snapshot cost tens of MB.
 */
const SHARE_CACHE_LIMIT = 4096;
const metadataCache = new Map<string, Record<string, string>>();
const templateCache = new Map<string, string>();

/**
 * Normalizes one sandbox record; `path` names it in errors (e.g. `sandboxes[3]`). `slim` skips
 * metadata, the end time and the unmapped fields (`extra`): the compact snapshot keeps none.
 */
export function normalizeSandbox(
  raw: unknown,
  map?: FieldMap,
  path = "sandbox",
  slim = false,
): Sandbox {
  if (!isRecord(raw)) throw new NormalizeError(path, "a sandbox object", raw);
  const t = fieldTable("sandbox", map);
  const f = t.fields;
  // The key walk comes first: it tells the field reads whether this record has the last one's keys.
  const extra = shareIfSame(t, collectFields(raw, t, undefined, false, !slim));
  const same = t.sameShape;
  const id = requiredId(raw, f.id, same, path, "sandbox");
  const templateId = intern(templateCache, str(raw, f.templateId, same, path) ?? "");
  const state = lowerState(str(raw, f.state, same, path));
  const cpuCount = num(raw, f.cpuCount, same, path, readCpuCount);
  const memoryMB = num(raw, f.memoryMB, same, path, readMemoryMB);
  const startedAt = time(raw, f.startedAt, same, path);
  const endAt = slim ? undefined : time(raw, f.endAt, same, path);
  const domain = str(raw, f.domain, same, path) || undefined;
  const metaRaw = slim ? undefined : f.metadata.read(raw, same);
  const metadata =
    metaRaw === undefined
      ? EMPTY_STRINGS
      : shareMetadata(readMetadata(metaRaw, raw, f.metadata, path));
  t.settled = true;
  // One object literal with every property, so all sandboxes share a single hidden class.
  return { id, templateId, state, cpuCount, memoryMB, startedAt, endAt, domain, metadata, extra };
}

/** Normalizes one node record: id, status, every numeric field, short string fields as info. */
export function normalizeNode(raw: unknown, map?: FieldMap, path = "node"): PlatformNode {
  const obj = asRecord(raw, path);
  const t = fieldTable("node", map);
  const info: Record<string, string> = {};
  const numeric = fresh(collectFields(obj, t, info, false));
  const id = requiredId(obj, t.fields.id, t.sameShape, path, "node");
  const status = lowerState(str(obj, t.fields.status, t.sameShape, path));
  t.settled = true;
  return { id, status, numeric, info };
}

/** Normalizes one template record: id, status, version, replicas, error, numeric and info fields. */
export function normalizeTemplate(raw: unknown, map?: FieldMap, path = "template"): Template {
  const obj = asRecord(raw, path);
  const t = fieldTable("template", map);
  const f = t.fields;
  const info: Record<string, string> = {};
  const numeric = fresh(collectFields(obj, t, info, false));
  const same = t.sameShape;
  const id = requiredId(obj, f.id, same, path, "template");
  const status = lowerState(str(obj, f.status, same, path));
  const version = str(obj, f.version, same, path) || undefined;
  const replicas = num(obj, f.replicas, same, path, readNumber);
  const error = errorText(f.error.read(obj, same));
  t.settled = true;
  return { id, status, version, replicas, error, numeric, info };
}

/** Normalizes one structured log entry; the record itself is kept as `raw`. */
export function normalizeLogEntry(raw: unknown, map?: FieldMap, path = "log"): LogEntry {
  const obj = asRecord(raw, path);
  const f = fieldTable("log", map).fields;
  // Log entries are read without the key walk, so without the shape memo.
  return {
    timestamp: time(obj, f.timestamp, false, path),
    message: str(obj, f.message, false, path),
    raw: obj,
  };
}

function requiredId(obj: Json, spec: FieldSpec, same: boolean, path: string, what: string): string {
  const v = spec.read(obj, same);
  if (typeof v === "string" && v !== "") return v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  throw new NormalizeError(
    `${path}.${keyOf(obj, spec.cands)}`,
    `a ${what} id (key ${spec.names})`,
    v,
  );
}

function str(obj: Json, spec: FieldSpec, same: boolean, path: string): string | undefined {
  const v = spec.read(obj, same);
  if (v === undefined || typeof v === "string") return v;
  return readString(v, `${path}.${keyOf(obj, spec.cands)}`);
}

function num(
  obj: Json,
  spec: FieldSpec,
  same: boolean,
  path: string,
  read: (v: unknown, path: string) => number,
): number | undefined {
  const v = spec.read(obj, same);
  if (v === undefined || (typeof v === "number" && Number.isFinite(v))) return v;
  return read(v, `${path}.${keyOf(obj, spec.cands)}`);
}

function time(obj: Json, spec: FieldSpec, same: boolean, path: string): number | undefined {
  const v = spec.read(obj, same);
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
function shareMetadata(m: Record<string, string>): Record<string, string> {
  if (m === EMPTY_STRINGS) return m;
  let key = "";
  for (const k in m) {
    const v = m[k] as string;
    // Length-prefixed, so no key or value can make two different maps collide.
    key += `${k.length}:${k}${v.length}:${v}`;
  }
  const hit = metadataCache.get(key);
  return hit ?? remember(metadataCache, key, SHARE_CACHE_LIMIT, () => Object.freeze(m));
}

function lowerState(s: string | undefined): string {
  if (s === undefined || s === "") return "unknown";
  return remember(stateCache, s, STATE_CACHE_LIMIT, lowerCased);
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
    out[k] = typeof x === "string" ? x : typeof x === "object" ? JSON.stringify(x) : String(x);
  }
  return out;
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
