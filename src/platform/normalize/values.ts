// Coercion of single JSON values (strings, numbers, times, string maps) and key spelling helpers.
import { ExporterError } from "../../util/errors.js";

/** Longest excerpt of a received value quoted in an error message. */
const EXCERPT_CHARS = 80;
/** Longest description of a received value given as text (e.g. the keys of an object). */
const RECEIVED_TEXT_CHARS = 100;
const MIB = 1_048_576;

type Json = Record<string, unknown>;

/** A record could not be read: `path` names the field (e.g. `sandboxes[3].startedAt`). */
export class NormalizeError extends ExporterError {
  /** What the field should have held, e.g. "a number". */
  readonly expected: string;
  /** What it held, e.g. `string "abc"`; never more than an 80-character excerpt. */
  readonly received: string;
  /** The received text before it was cut (a string value, or `receivedText`); never enumerable. */
  readonly #whole: string | undefined;
  readonly #isValue: boolean;

  /** `receivedText`, when given, replaces the generated description of `received`. */
  constructor(
    readonly path: string,
    expected: string,
    received: unknown,
    receivedText?: string,
  ) {
    const got =
      receivedText === undefined ? describeValue(received) : cut(receivedText, RECEIVED_TEXT_CHARS);
    super("ERR_NORMALIZE", `${path}: expected ${expected}, got ${got}`);
    this.expected = expected;
    this.received = got;
    this.#isValue = receivedText === undefined;
    this.#whole = receivedText ?? (typeof received === "string" ? received : undefined);
  }

  /**
   * This error with `secrets` scrubbed from what was received before that is cut to an excerpt
   * (scrubbing the excerpt could leave the head of a secret that straddles the cut).
   */
  redacted(secrets: { scrub(text: string): string }): NormalizeError {
    const whole = this.#whole;
    if (whole === undefined) return this;
    const clean = secrets.scrub(whole);
    if (clean === whole) return this;
    return this.#isValue
      ? new NormalizeError(this.path, this.expected, clean)
      : new NormalizeError(this.path, this.expected, undefined, clean);
  }
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** A short description of a value for error messages: its type, and an excerpt of scalars. */
function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === "string") {
    return `string ${JSON.stringify(cut(v, EXCERPT_CHARS))}`;
  }
  if (typeof v === "number" || typeof v === "boolean") return `${typeof v} ${String(v)}`;
  return typeof v;
}

/** True for a plain JSON object (not null, not an array). */
export function isRecord(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The value as an object, or a NormalizeError naming `path`. */
export function asRecord(v: unknown, path: string): Json {
  if (!isRecord(v)) throw new NormalizeError(path, "an object", v);
  return v;
}

/** A string field: strings as they are, numbers and booleans as text. */
export function readString(v: unknown, path: string): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new NormalizeError(path, "a string", v);
}

/** A number field: finite numbers, or strings holding one. */
export function readNumber(v: unknown, path: string): number {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  const n = typeof v === "string" ? numericString(v) : undefined;
  if (n === undefined) throw new NormalizeError(path, "a number", v);
  return n;
}

/** The number a string spells ("12", " 1.5e3 "), or undefined. */
function numericString(s: string): number | undefined {
  if (s.trim() === "") return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

const QUANTITY = /^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$/;
const MEMORY_UNITS: Record<string, number> = {
  "": 1,
  m: 1,
  mb: 1,
  mi: 1,
  mib: 1,
  k: 1 / 1024,
  kb: 1 / 1024,
  ki: 1 / 1024,
  kib: 1 / 1024,
  b: 1 / MIB,
  g: 1024,
  gb: 1024,
  gi: 1024,
  gib: 1024,
  t: MIB,
  tb: MIB,
  ti: MIB,
  tib: MIB,
};

/** Memory in MiB: a number, or a quantity such as "512Mi", "2GiB", "1g" (binary units). */
export function readMemoryMB(v: unknown, path: string): number {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string") {
    const m = QUANTITY.exec(v);
    const factor = m ? MEMORY_UNITS[(m[2] as string).toLowerCase()] : undefined;
    if (m && factor !== undefined) return Number(m[1]) * factor;
  }
  throw new NormalizeError(path, 'a number of MiB (or a quantity like "512Mi")', v);
}

/** CPU count: a number, or a quantity such as "2" or "500m" (millicores). */
export function readCpuCount(v: unknown, path: string): number {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string") {
    const m = QUANTITY.exec(v);
    if (m && m[2] === "") return Number(m[1]);
    if (m && m[2] === "m") return Number(m[1]) / 1000;
  }
  throw new NormalizeError(path, 'a number of CPUs (or millicores like "500m")', v);
}

/**
 * Epoch milliseconds from a number or numeric string, by magnitude: below 1e11 seconds, below 1e14
 * milliseconds, below 1e17 microseconds, else nanoseconds. Zero or less means "not set" (undefined).
 */
export function epochMs(n: number): number | undefined {
  if (!(n > 0)) return undefined;
  if (n < 1e11) return Math.round(n * 1000);
  if (n < 1e14) return Math.round(n);
  if (n < 1e17) return Math.round(n / 1e3);
  return Math.round(n / 1e6);
}

/**
 * A time field -> epoch ms: ISO 8601 / RFC 3339 text (a missing zone means UTC), epoch seconds,
 * milliseconds, micro- or nanoseconds as a number or numeric string. Go's zero time and epoch 0
 * mean "not set" and give undefined.
 */
export function readTime(v: unknown, path: string): number | undefined {
  if (typeof v === "number" && Number.isFinite(v)) return epochMs(v);
  if (typeof v === "string") {
    const iso = parseIsoTime(v);
    if (iso !== undefined) return iso > 0 ? iso : undefined;
    const n = numericString(v);
    if (n !== undefined) return epochMs(n);
    // Other formats (RFC 2822 and the like) only when they carry a year: V8 reads "foo 1" as 2001.
    const t = /\d{4}/.test(v) ? Date.parse(v) : Number.NaN;
    if (Number.isFinite(t)) return t > 0 ? t : undefined;
  }
  throw new NormalizeError(path, "a time (ISO 8601, or epoch seconds or milliseconds)", v);
}

function digits(s: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * `YYYY-MM-DD[T ]HH:MM[:SS[.frac]][Z|±HH[:]MM]` -> epoch ms, or undefined for anything else.
 * Hand-rolled because it runs twice per sandbox and Date.parse reads a zone-less time as local.
 */
export function parseIsoTime(s: string): number | undefined {
  const len = s.length;
  if (len < 16 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return undefined;
  const sep = s.charCodeAt(10);
  if ((sep !== 84 && sep !== 116 && sep !== 32) || s.charCodeAt(13) !== 58) return undefined;
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 24)
    return undefined;
  if (minute < 0 || minute > 59) return undefined;
  let i = 16;
  let second = 0;
  let ms = 0;
  if (s.charCodeAt(i) === 58) {
    second = digits(s, 17, 2);
    if (second < 0 || second > 60) return undefined;
    i = 19;
    const dot = s.charCodeAt(i);
    if (dot === 46 || dot === 44) {
      let scale = 100;
      for (i++; i < len; i++) {
        const c = s.charCodeAt(i) - 48;
        if (c < 0 || c > 9) break;
        ms += c * scale;
        scale /= 10;
      }
      ms = Math.floor(ms);
    }
  }
  let offsetMin = 0;
  if (i < len) {
    const z = s.charCodeAt(i);
    if ((z === 90 || z === 122) && i + 1 === len) offsetMin = 0;
    else if (z === 43 || z === 45) {
      const oh = digits(s, i + 1, 2);
      const colon = s.charCodeAt(i + 3) === 58 ? 1 : 0;
      const om = digits(s, i + 3 + colon, 2);
      if (oh < 0 || om < 0 || i + 5 + colon !== len) return undefined;
      offsetMin = (z === 43 ? 1 : -1) * (oh * 60 + om);
    } else return undefined;
  }
  const seconds = hour * 3600 + minute * 60 + second - offsetMin * 60;
  return daysFromCivil(year, month, day) * 86_400_000 + seconds * 1000 + ms;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm; Date.UTC costs 2x). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  return era * 146_097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468;
}

/** True when a string starts like an ISO 8601 date-time (cheap pre-check for parseIsoTime). */
export function looksLikeIsoTime(s: string): boolean {
  return s.length >= 16 && s.length <= 40 && s.charCodeAt(4) === 45 && s.charCodeAt(13) === 58;
}

// Unit and plural acronyms that camelCase splitting would tear apart (memUsedMiB, numCPUs).
const ACRONYMS =
  /(VCPUs|CPUs|GPUs|VMs|IPs|IDs|URLs|KiB|MiB|GiB|TiB|PiB)(?=[A-Z_0-9]|$)|(KB|MB|GB|TB|PB)(?=[A-Z_0-9]|$)/g;

/**
 * cpuCount -> cpu_count, memoryMB -> memory_mb, HTTPPort -> http_port, numCPUs -> num_cpus.
 * Not cached here: a Normalizer remembers the names of the keys it meets (KeyNames).
 */
export function snakeCase(name: string): string {
  return name
    .replace(ACRONYMS, (m) => `_${m.toLowerCase()}_`)
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[^a-zA-Z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase();
}

/** A key compared loosely: lower-cased, without `_` and `-` (NodeID, node_id and nodeId agree). */
export function looseKey(key: string): string {
  return key.replace(/[_-]/g, "").toLowerCase();
}

const VALID_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A valid Prometheus label name: invalid characters -> `_`, a leading digit gets a `_` prefix. */
export function sanitizeLabelName(key: string): string {
  if (VALID_LABEL.test(key) && !key.startsWith("__")) return key;
  // Names starting with "__" are reserved for Prometheus itself.
  const s = key.replace(/[^a-zA-Z0-9_]/g, "_").replace(/^_{2,}/, "_");
  if (s === "") return "_";
  return /^[0-9]/.test(s) ? `_${s}` : s;
}
