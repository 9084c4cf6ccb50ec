// Raw platform JSON -> domain types, accepting every common spelling (DESIGN.md "Tolerating the unknown").
import { ExporterError } from "../util/errors.js";
import type {
  ClusterOverview,
  Health,
  LogEntry,
  Page,
  PlatformNode,
  Sandbox,
  Template,
} from "./types.js";

/** Our field name -> the platform's JSON key, per resource; overrides the built-in spellings. */
export interface FieldMap {
  sandbox?: Record<string, string>;
  node?: Record<string, string>;
  template?: Record<string, string>;
  log?: Record<string, string>;
  list?: Record<string, string>;
}

/** A record could not be read; `path` names the field. */
export class NormalizeError extends ExporterError {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super("ERR_NORMALIZE", `${path}: ${message}`);
  }
}

type Json = Record<string, unknown>;

const SANDBOX_FIELDS = {
  id: ["sandboxID", "sandboxId", "sandbox_id", "id"],
  templateId: ["templateID", "templateId", "template_id", "template"],
  state: ["state", "status"],
  cpuCount: ["cpuCount", "cpu_count", "cpu", "cpus"],
  memoryMB: ["memoryMB", "memoryMb", "memory_mb", "memory"],
  startedAt: ["startedAt", "startTime", "started_at", "start_time", "createdAt", "created_at"],
  endAt: ["endAt", "end_at"],
  metadata: ["metadata", "labels"],
  domain: ["domain"],
};
const NODE_FIELDS = { id: ["nodeID", "nodeId", "node_id", "id"], status: ["status", "state"] };
const TEMPLATE_FIELDS = {
  id: ["templateID", "templateId", "template_id", "id"],
  status: ["status", "state", "buildStatus", "build_status"],
  version: ["version", "buildID", "buildId", "build_id"],
  replicas: ["replicas", "replicaCount", "replica_count"],
  error: ["error", "errorMessage", "error_message"],
};
const LOG_FIELDS = {
  timestamp: ["timestamp", "time", "ts", "createdAt", "created_at"],
  message: ["message", "line", "msg", "log"],
};
const LIST_KEYS = [
  "sandboxes",
  "items",
  "data",
  "nodes",
  "templates",
  "entries",
  "logs",
  "results",
];
const TOKEN_KEYS = ["nextToken", "next_token", "nextCursor", "next_cursor", "cursor", "next"];
const UP_WORDS = new Set(["ok", "healthy", "up", "pass", "ready", "true", "running"]);
const DOWN_WORDS = new Set(["down", "unhealthy", "fail", "failed", "error", "false", "degraded"]);
const INFO_MAX = 120;

const snakeCache = new Map<string, string>();
const EMPTY_NUMBERS: Record<string, number> = Object.freeze({}) as Record<string, number>;
const EMPTY_STRINGS: Record<string, string> = Object.freeze({}) as Record<string, string>;

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

/** cpuCount -> cpu_count, memoryMB -> memory_mb, HTTPPort -> http_port. */
export function snakeCase(name: string): string {
  let out = snakeCache.get(name);
  if (out === undefined) {
    out = name
      .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
      .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
      .replace(/[^a-zA-Z0-9]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .toLowerCase();
    snakeCache.set(name, out);
  }
  return out;
}

/** A valid Prometheus label name for any key. */
export function sanitizeLabelName(key: string): string {
  const s = key.replace(/[^a-zA-Z0-9_]/g, "_");
  return /^[0-9]/.test(s) ? `_${s}` : s || "_";
}

function asObject(raw: unknown, path: string): Json {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new NormalizeError(path, `expected an object, got ${kind(raw)}`);
  }
  return raw as Json;
}

function kind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "string")
    return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  return typeof v;
}

/** The first present key among the override and the spellings. */
function pick(
  obj: Json,
  spellings: readonly string[],
  override: string | undefined,
): [string, unknown] | undefined {
  if (override !== undefined) return override in obj ? [override, obj[override]] : undefined;
  for (const key of spellings) {
    const v = obj[key];
    if (v !== undefined && v !== null) return [key, v];
  }
  return undefined;
}

function str(found: [string, unknown] | undefined, path: string): string | undefined {
  if (!found) return undefined;
  const [key, v] = found;
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new NormalizeError(`${path}.${key}`, `expected a string, got ${kind(v)}`);
}

function num(found: [string, unknown] | undefined, path: string): number | undefined {
  if (!found) return undefined;
  const [key, v] = found;
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  throw new NormalizeError(`${path}.${key}`, `expected a number, got ${kind(v)}`);
}

/** ISO text, epoch seconds or epoch milliseconds -> epoch ms. */
function time(found: [string, unknown] | undefined, path: string): number | undefined {
  if (!found) return undefined;
  const [key, v] = found;
  if (typeof v === "number" || (typeof v === "string" && /^\d+(\.\d+)?$/.test(v))) {
    const n = Number(v);
    return n < 1e11 ? n * 1000 : n;
  }
  if (typeof v === "string") {
    const t = Date.parse(v);
    if (!Number.isNaN(t)) return t;
  }
  throw new NormalizeError(
    `${path}.${key}`,
    `expected a timestamp (ISO 8601 or epoch), got ${kind(v)}`,
  );
}

function stringMap(found: [string, unknown] | undefined, path: string): Record<string, string> {
  if (!found) return {};
  const obj = asObject(found[1], `${path}.${found[0]}`);
  const out: Record<string, string> = {};
  for (const k in obj) {
    const v = obj[k];
    if (v !== undefined && v !== null) out[k] = typeof v === "string" ? v : JSON.stringify(v);
  }
  return out;
}

/** Numeric fields (one level of nesting flattened) and short string fields, minus the mapped ones. */
function leftovers(
  obj: Json,
  used: Set<string>,
  numeric: Record<string, number>,
  info?: Record<string, string>,
): void {
  for (const key in obj) {
    if (used.has(key)) continue;
    const v = obj[key];
    if (typeof v === "number" && Number.isFinite(v)) numeric[snakeCase(key)] = v;
    else if (typeof v === "string" && info && v.length <= INFO_MAX && v !== "")
      info[snakeCase(key)] = v;
    else if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      for (const [inner, iv] of Object.entries(v as Json)) {
        if (typeof iv === "number" && Number.isFinite(iv))
          numeric[`${snakeCase(key)}_${snakeCase(inner)}`] = iv;
      }
    }
  }
}

function usedKeys(...found: Array<[string, unknown] | undefined>): Set<string> {
  const s = new Set<string>();
  for (const f of found) if (f) s.add(f[0]);
  return s;
}

/** Normalizes one sandbox record. */
export function normalizeSandbox(raw: unknown, map?: FieldMap, path = "sandbox"): Sandbox {
  const obj = asObject(raw, path);
  const m = map?.sandbox ?? {};
  const F = SANDBOX_FIELDS;
  const idF = pick(obj, F.id, m.id);
  const id = str(idF, path);
  if (!id) throw new NormalizeError(`${path}.${m.id ?? "sandboxID"}`, "missing sandbox id");
  const tplF = pick(obj, F.templateId, m.templateId);
  const stateF = pick(obj, F.state, m.state);
  const cpuF = pick(obj, F.cpuCount, m.cpuCount);
  const memF = pick(obj, F.memoryMB, m.memoryMB);
  const startF = pick(obj, F.startedAt, m.startedAt);
  const endF = pick(obj, F.endAt, m.endAt);
  const metaF = pick(obj, F.metadata, m.metadata);
  const domF = pick(obj, F.domain, m.domain);
  const sandbox: Sandbox = {
    id,
    templateId: str(tplF, path) ?? "",
    state: (str(stateF, path) ?? "unknown").toLowerCase(),
    metadata: stringMap(metaF, path),
    extra: {},
  };
  const cpu = num(cpuF, path);
  if (cpu !== undefined) sandbox.cpuCount = cpu;
  const mem = num(memF, path);
  if (mem !== undefined) sandbox.memoryMB = mem;
  const started = time(startF, path);
  if (started !== undefined) sandbox.startedAt = started;
  const end = time(endF, path);
  if (end !== undefined) sandbox.endAt = end;
  const domain = str(domF, path);
  if (domain) sandbox.domain = domain;
  leftovers(obj, usedKeys(idF, tplF, stateF, cpuF, memF, startF, endF, metaF, domF), sandbox.extra);
  // 100,000 sandboxes are held per snapshot: empty maps share one frozen object.
  if (isEmpty(sandbox.extra)) sandbox.extra = EMPTY_NUMBERS;
  if (isEmpty(sandbox.metadata)) sandbox.metadata = EMPTY_STRINGS;
  return sandbox;
}

/** Normalizes one node record. */
export function normalizeNode(raw: unknown, map?: FieldMap, path = "node"): PlatformNode {
  const obj = asObject(raw, path);
  const m = map?.node ?? {};
  const idF = pick(obj, NODE_FIELDS.id, m.id);
  const id = str(idF, path);
  if (!id) throw new NormalizeError(`${path}.${m.id ?? "nodeID"}`, "missing node id");
  const statusF = pick(obj, NODE_FIELDS.status, m.status);
  const node: PlatformNode = {
    id,
    status: (str(statusF, path) ?? "unknown").toLowerCase(),
    numeric: {},
    info: {},
  };
  leftovers(obj, usedKeys(idF, statusF), node.numeric, node.info);
  return node;
}

/** Normalizes one template record. */
export function normalizeTemplate(raw: unknown, map?: FieldMap, path = "template"): Template {
  const obj = asObject(raw, path);
  const m = map?.template ?? {};
  const F = TEMPLATE_FIELDS;
  const idF = pick(obj, F.id, m.id);
  const id = str(idF, path);
  if (!id) throw new NormalizeError(`${path}.${m.id ?? "templateID"}`, "missing template id");
  const statusF = pick(obj, F.status, m.status);
  const versionF = pick(obj, F.version, m.version);
  const replicasF = pick(obj, F.replicas, m.replicas);
  const errorF = pick(obj, F.error, m.error);
  const t: Template = {
    id,
    status: (str(statusF, path) ?? "unknown").toLowerCase(),
    numeric: {},
    info: {},
  };
  const version = str(versionF, path);
  if (version !== undefined) t.version = version;
  const replicas = num(replicasF, path);
  if (replicas !== undefined) t.replicas = replicas;
  if (errorF) {
    const e = errorF[1];
    const text =
      typeof e === "object" && e !== null
        ? String((e as Json).message ?? JSON.stringify(e))
        : String(e);
    if (text !== "" && e !== false) t.error = text;
  }
  leftovers(obj, usedKeys(idF, statusF, versionF, replicasF, errorF), t.numeric, t.info);
  return t;
}

/** Every numeric field of the cluster overview, snake_cased. */
export function normalizeOverview(raw: unknown): ClusterOverview {
  const obj = { ...asObject(raw, "overview") };
  const numeric: Record<string, number> = {};
  for (const key in obj) {
    const v = obj[key];
    if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)))
      obj[key] = Number(v);
  }
  leftovers(obj, new Set(), numeric);
  return { numeric };
}

/** Up when the status is 2xx and the body does not say otherwise. */
export function normalizeHealth(status: number, body: unknown): Health {
  const ok = status >= 200 && status < 300;
  let word: string | undefined;
  if (typeof body === "string") word = body.trim().toLowerCase() || undefined;
  else if (typeof body === "object" && body !== null) {
    const f = pick(body as Json, ["status", "state", "health"], undefined);
    if (f && (typeof f[1] === "string" || typeof f[1] === "boolean"))
      word = String(f[1]).toLowerCase();
  }
  const up = ok && !(word !== undefined && DOWN_WORDS.has(word));
  return word !== undefined && (UP_WORDS.has(word) || DOWN_WORDS.has(word) || word.length <= 32)
    ? { up, status: word }
    : { up };
}

/** Normalizes one structured log entry. */
export function normalizeLogEntry(raw: unknown, map?: FieldMap, path = "log"): LogEntry {
  const obj = asObject(raw, path);
  const m = map?.log ?? {};
  const entry: LogEntry = { raw: obj };
  const ts = time(pick(obj, LOG_FIELDS.timestamp, m.timestamp), path);
  if (ts !== undefined) entry.timestamp = ts;
  const msg = str(pick(obj, LOG_FIELDS.message, m.message), path);
  if (msg !== undefined) entry.message = msg;
  return entry;
}

function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  for (const key in headers) {
    if (key.toLowerCase() === name) {
      const v = headers[key];
      return Array.isArray(v) ? v[0] : v;
    }
  }
  return undefined;
}

/** A list page whose items are normalized on demand (so the next request can be in flight meanwhile). */
export interface DeferredPage<T> {
  nextToken?: string;
  size: number;
  /** Normalizes the items; throws NormalizeError naming the bad item. */
  items(): T[];
}

/** A page of a list: a bare array or a wrapper object; the next token in the body or `x-next-token`. */
export function deferList<T>(
  body: unknown,
  headers: Record<string, string | string[] | undefined>,
  item: (raw: unknown, path: string) => T,
  options: { wrapperKeys?: string[]; map?: FieldMap } = {},
): DeferredPage<T> {
  const m = options.map?.list ?? {};
  let array: unknown;
  let arrayName = "";
  let token: unknown;
  if (Array.isArray(body)) array = body;
  else if (typeof body === "object" && body !== null) {
    const obj = body as Json;
    const found = pick(obj, options.wrapperKeys ?? LIST_KEYS, m.items);
    if (!found || !Array.isArray(found[1])) {
      throw new NormalizeError(
        "(body)",
        `expected an array or an object holding one under ${(options.wrapperKeys ?? LIST_KEYS).join("|")}`,
      );
    }
    [arrayName, array] = found;
    token = pick(obj, TOKEN_KEYS, m.nextToken)?.[1];
    if (token === undefined) {
      for (const nest of ["pagination", "meta"]) {
        const inner = obj[nest];
        if (typeof inner === "object" && inner !== null)
          token ??= pick(inner as Json, TOKEN_KEYS, undefined)?.[1];
      }
    }
  } else throw new NormalizeError("(body)", `expected a list, got ${kind(body)}`);
  token ??= headerValue(headers, "x-next-token");
  const list = array as unknown[];
  const prefix = arrayName || "";
  const page: DeferredPage<T> = {
    size: list.length,
    items() {
      const items = new Array<T>(list.length);
      for (let i = 0; i < list.length; i++) items[i] = item(list[i], `${prefix}[${i}]`);
      return items;
    },
  };
  if (typeof token === "string" && token !== "") page.nextToken = token;
  else if (typeof token === "number") page.nextToken = String(token);
  return page;
}

/** Like deferList, with the items normalized at once. */
export function normalizeList<T>(
  body: unknown,
  headers: Record<string, string | string[] | undefined>,
  item: (raw: unknown, path: string) => T,
  options: { wrapperKeys?: string[]; map?: FieldMap } = {},
): Page<T> {
  const d = deferList(body, headers, item, options);
  return d.nextToken === undefined
    ? { items: d.items() }
    : { items: d.items(), nextToken: d.nextToken };
}
