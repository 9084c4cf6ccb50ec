// What the platform may not put in an exposition: label values too long for a Prometheus with
// label_value_length_limit (one such series rejects the whole scrape), negative resource sizes.

import { fnv1a32 } from "../util/shard.js";

/**
 * Length of what replaces the cut end: `...[truncated 1a2b3c4d]`, the hash of the whole value, so
 * two long ids that share their first characters still make two series, not one duplicated.
 */
const SUFFIX_LENGTH = "...[truncated 00000000]".length;

/** Resource fields whose values must be numbers of 0 or more: sizes, and usage samples. */
export const RESOURCE_FIELDS = ["cpu", "memory", "cpu_used", "memory_used", "disk_used"] as const;
export type ResourceField = (typeof RESOURCE_FIELDS)[number];

/** Cuts over-long label values and drops negative resource values for one snapshot, counting both. */
export class ValueGuard {
  /** Label values cut in this render. */
  truncated = 0;
  /** Negative (or NaN) resource values left out, by field. */
  readonly negative: Record<ResourceField, number> = {
    cpu: 0,
    memory: 0,
    cpu_used: 0,
    memory_used: 0,
    disk_used: 0,
  };

  /**
   * `maxLabelLength`: longest label value kept whole, in UTF-16 units, suffix included; `scrub`
   * removes secrets a hostile platform echoed into a value.
   */
  constructor(
    readonly maxLabelLength: number,
    private readonly scrub?: (text: string) => string,
  ) {}

  /**
   * `v` without secrets, cut to its first characters and a `...[truncated <hash>]` suffix when
   * longer than the limit.
   */
  label(value: string): string {
    const v = this.scrub ? this.scrub(value) : value;
    const max = this.maxLabelLength;
    if (v.length <= max) return v;
    this.truncated++;
    let cut = Math.max(0, max - SUFFIX_LENGTH);
    // Never split a surrogate pair: half of one is not valid UTF-8.
    const last = v.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff) cut--;
    const hash = fnv1a32(v).toString(16).padStart(8, "0");
    return `${v.slice(0, cut)}...[truncated ${hash}]`;
  }

  /** A resource value, or undefined (and counted) when it is negative or NaN. */
  resource(field: ResourceField, v: number | undefined): number | undefined {
    if (v === undefined || v >= 0) return v;
    this.negative[field]++;
    return undefined;
  }
}

/** A guard that changes nothing (renderers tested on their own). */
export function noGuard(): ValueGuard {
  return new ValueGuard(Number.POSITIVE_INFINITY);
}
