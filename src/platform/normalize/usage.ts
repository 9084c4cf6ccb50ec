// Resource-usage samples (E2B's SandboxMetric): GET /sandboxes/metrics and /sandboxes/{id}/metrics.
import type { SandboxUsage } from "../types.js";
import { type InvalidValues, RECORD_FIELD } from "./invalid-values.js";
import { isRecord, MAX_CPUS, MAX_TIME_MS, NormalizeError, parseNumber } from "./values.js";

/** Largest CPU use accepted, percent: E2B's is a share of the sandbox's vCPUs; a generous cap. */
const MAX_PERCENT = 1_000;
/** Largest byte count accepted (an exabyte). */
const MAX_BYTES = 1e18;
const RESOURCE = "usage";

/** Optional fields of a sample: key -> the SandboxUsage field, its label and its largest value. */
const OPTIONAL = [
  ["cpuCount", "cpuCount", "cpu_count", MAX_CPUS],
  ["memUsed", "memUsedBytes", "mem_used", MAX_BYTES],
  ["memTotal", "memTotalBytes", "mem_total", MAX_BYTES],
  ["diskUsed", "diskUsedBytes", "disk_used", MAX_BYTES],
  ["diskTotal", "diskTotalBytes", "disk_total", MAX_BYTES],
] as const;

/**
 * One SandboxMetric. `cpuUsedPct` (0 to 1,000) and a time (`timestampUnix`, else `timestamp`) are
 * required: a sample without them is left out (undefined) and counted in `invalid`. An optional
 * field that does not parse or is out of range (negative, past an exabyte) is left out and counted.
 */
export function normalizeUsage(
  raw: unknown,
  invalid: InvalidValues | undefined,
): SandboxUsage | undefined {
  if (!isRecord(raw)) return drop(invalid, RECORD_FIELD);
  const cpuPct = parseNumber(raw.cpuUsedPct);
  if (cpuPct === undefined || !(cpuPct >= 0 && cpuPct <= MAX_PERCENT))
    return drop(invalid, "cpu_used_pct");
  const at = sampleTime(raw);
  if (at === undefined) return drop(invalid, "timestamp");
  const out: SandboxUsage = {
    at,
    cpuPct,
    cpuCount: undefined,
    memUsedBytes: undefined,
    memTotalBytes: undefined,
    diskUsedBytes: undefined,
    diskTotalBytes: undefined,
  };
  for (const [key, field, label, max] of OPTIONAL) {
    const v = raw[key];
    if (v === undefined || v === null) continue;
    const x = parseNumber(v);
    if (x !== undefined && x >= 0 && x <= max) out[field] = x;
    else invalid?.add(RESOURCE, label);
  }
  return out;
}

/**
 * Epoch ms of `timestampUnix` (seconds), else of the ISO `timestamp`; undefined when neither reads.
 * E2B's usage samples and team metric points both carry this pair.
 */
export function sampleTime(o: Record<string, unknown>): number | undefined {
  let at: number;
  if (o.timestampUnix !== undefined && o.timestampUnix !== null) {
    const s = parseNumber(o.timestampUnix);
    if (s === undefined) return undefined;
    at = s * 1000;
  } else at = typeof o.timestamp === "string" ? Date.parse(o.timestamp) : Number.NaN;
  return at > 0 && at <= MAX_TIME_MS ? at : undefined;
}

function drop(invalid: InvalidValues | undefined, field: string): undefined {
  invalid?.add(RESOURCE, field);
  return undefined;
}

/**
 * `{"sandboxes": {id: SandboxMetric}}` -> id -> usage; ids the platform left out are absent, and
 * so are samples normalizeUsage leaves out. A body without that object is a NormalizeError.
 */
export function normalizeUsageMap(
  body: unknown,
  invalid?: InvalidValues,
): Map<string, SandboxUsage> {
  const o = isRecord(body) ? body.sandboxes : undefined;
  if (!isRecord(o)) {
    const path = isRecord(body) ? "body.sandboxes" : "body";
    throw new NormalizeError(path, "an object of samples by id", isRecord(body) ? o : body);
  }
  const out = new Map<string, SandboxUsage>();
  for (const [id, raw] of Object.entries(o)) {
    const u = normalizeUsage(raw, invalid);
    if (u !== undefined) out.set(id, u);
  }
  return out;
}

/** A list of SandboxMetric, oldest first, without the samples normalizeUsage leaves out. */
export function normalizeUsageList(body: unknown, invalid?: InvalidValues): SandboxUsage[] {
  if (!Array.isArray(body)) throw new NormalizeError("body", "a list of samples", body);
  const out: SandboxUsage[] = [];
  for (const raw of body) {
    const u = normalizeUsage(raw, invalid);
    if (u !== undefined) out.push(u);
  }
  return out.sort((a, b) => a.at - b.at);
}
