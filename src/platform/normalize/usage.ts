// Resource-usage samples (E2B's SandboxMetric): GET /sandboxes/metrics and /sandboxes/{id}/metrics.
import type { SandboxUsage } from "../types.js";
import { asRecord, isRecord, NormalizeError, readNumber } from "./values.js";

/** One SandboxMetric; `cpuUsedPct` and a time (`timestampUnix`, else `timestamp`) are required. */
export function normalizeUsage(raw: unknown, path: string): SandboxUsage {
  const o = asRecord(raw, path);
  const cpuPct = readNumber(o.cpuUsedPct, `${path}.cpuUsedPct`);
  if (cpuPct < 0)
    throw new NormalizeError(`${path}.cpuUsedPct`, "a percentage of 0 or more", cpuPct);
  let at: number;
  if (o.timestampUnix !== undefined)
    at = readNumber(o.timestampUnix, `${path}.timestampUnix`) * 1000;
  else {
    const t = typeof o.timestamp === "string" ? Date.parse(o.timestamp) : Number.NaN;
    if (Number.isNaN(t))
      throw new NormalizeError(`${path}.timestampUnix`, "a Unix time", o.timestamp);
    at = t;
  }
  const opt = (k: string): number | undefined =>
    o[k] === undefined || o[k] === null ? undefined : readNumber(o[k], `${path}.${k}`);
  return {
    at,
    cpuPct,
    cpuCount: opt("cpuCount"),
    memUsedBytes: opt("memUsed"),
    memTotalBytes: opt("memTotal"),
    diskUsedBytes: opt("diskUsed"),
    diskTotalBytes: opt("diskTotal"),
  };
}

/** `{"sandboxes": {id: SandboxMetric}}` -> id -> usage; ids the platform left out are absent. */
export function normalizeUsageMap(body: unknown): Map<string, SandboxUsage> {
  const o = asRecord(body, "body");
  if (!isRecord(o.sandboxes))
    throw new NormalizeError("body.sandboxes", "an object of samples by id", o.sandboxes);
  const out = new Map<string, SandboxUsage>();
  for (const [id, raw] of Object.entries(o.sandboxes))
    out.set(id, normalizeUsage(raw, `sandboxes.${id}`));
  return out;
}

/** A list of SandboxMetric, oldest first. */
export function normalizeUsageList(body: unknown): SandboxUsage[] {
  if (!Array.isArray(body)) throw new NormalizeError("body", "a list of samples", body);
  return body.map((raw, i) => normalizeUsage(raw, `[${i}]`)).sort((a, b) => a.at - b.at);
}
