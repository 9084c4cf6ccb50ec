// Coercion of single JSON values (strings, numbers, times, string maps) and key spelling helpers.
import { ExporterError } from "../../util/errors.js";
import { epochMs, parseIsoTime } from "../../util/time.js";

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

/**
 * A record that cannot be tracked: not an object, or without its id. A list leaves it out and
 * counts it under `resource` and `field` (`record` or `id`); a read of that one record fails.
 */
export class UntrackableRecordError extends NormalizeError {
  constructor(
    path: string,
    expected: string,
    received: unknown,
    readonly resource: string,
    readonly field: string,
  ) {
    super(path, expected, received);
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

/**
 * Latest time accepted, 9999-12-31T23:59:59.999Z: a later one (`+275760-09-13T00:00:01Z`, an
 * epoch number of 1e308) is no time the platform meant.
 */
export const MAX_TIME_MS = 253_402_300_799_999;
/** Largest CPU count accepted (either sign: negative ones are counted downstream). */
export const MAX_CPUS = 1e6;
/** Largest memory accepted, MiB (about an exbibyte), either sign. */
export const MAX_MEMORY_MB = 1e12;
/**
 * Largest magnitude of any other number: past every count, byte size and epoch nanosecond, short
 * of the 1e308 a broken encoder sends.
 */
export const MAX_MAGNITUDE = 1e20;

/** The number a string spells in decimal ("12", " -1.5e3 "), else undefined: "0x10", "Infinity". */
export function decimalNumber(s: string): number | undefined {
  if (!DECIMAL.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

const DECIMAL = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** A number field: a finite number, or a string holding one in decimal; else undefined. */
export function parseNumber(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  return typeof v === "string" ? decimalNumber(v) : undefined;
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

/** Memory in MiB: a number, or a quantity such as "512Mi", "2GiB", "1g" (binary units); else undefined. */
export function parseMemoryMB(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "string") {
    const n = decimalNumber(v);
    if (n !== undefined) return n;
    const m = QUANTITY.exec(v);
    const factor = m ? MEMORY_UNITS[(m[2] as string).toLowerCase()] : undefined;
    if (m && factor !== undefined) return Number(m[1]) * factor;
  }
  return undefined;
}

/** CPU count: a number, or a quantity such as "2" or "500m" (millicores); else undefined. */
export function parseCpuCount(v: unknown): number | undefined {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "string") {
    const n = decimalNumber(v);
    if (n !== undefined) return n;
    const m = QUANTITY.exec(v);
    if (m && m[2] === "") return Number(m[1]);
    if (m && m[2] === "m") return Number(m[1]) / 1000;
  }
  return undefined;
}

/**
 * A time field -> epoch ms: ISO 8601 / RFC 3339 text (a missing zone means UTC), epoch seconds,
 * milliseconds, micro- or nanoseconds as a number or decimal string. Go's zero time and epoch 0
 * mean "not set" and give undefined; text that is no time, or a time past MAX_TIME_MS, gives NaN.
 */
export function parseTime(v: unknown): number | undefined {
  let ms: number | undefined;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return Number.NaN;
    ms = epochMs(v);
  } else if (typeof v === "string") {
    ms = parseIsoTime(v);
    if (ms === undefined) {
      const n = decimalNumber(v);
      if (n !== undefined) ms = epochMs(n);
      else {
        // Other formats (RFC 2822 and the like) only with a year: V8 reads "foo 1" as 2001.
        const t = /\d{4}/.test(v) ? Date.parse(v) : Number.NaN;
        if (!Number.isFinite(t)) return Number.NaN;
        ms = t;
      }
    }
  } else return Number.NaN;
  if (ms === undefined || ms <= 0) return undefined;
  return ms > MAX_TIME_MS ? Number.NaN : ms;
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
