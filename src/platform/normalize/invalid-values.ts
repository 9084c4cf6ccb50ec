// The values and records a Normalizer left out because they did not parse or were out of range:
// the data of sandbox_exporter_invalid_values_dropped_total{resource,field}.

/** Distinct (resource, field) pairs counted; generic field names come from the wire, so capped. */
const PAIRS_MAX = 256;
/** The field of the counts past the cap. */
export const OTHER_FIELD = "other";
/** The field under which a list item that is not an object is counted. */
export const RECORD_FIELD = "record";

/** How many values of one field of one resource were left out. */
export interface InvalidCount {
  readonly resource: string;
  readonly field: string;
  readonly count: number;
}

/**
 * Counts of values (and records) left out, by resource (`sandbox`, `node`, `template`, `log`,
 * `usage`, `overview`) and snake_case field (`end_at`; `id` or `record` for a whole record).
 * A Normalizer owns one; a reader publishes it, nothing else resets it.
 */
export class InvalidValues {
  private readonly counts = new Map<string, { resource: string; field: string; count: number }>();

  /** Counts one value of `field` of `resource` left out. */
  add(resource: string, field: string): void {
    const key = `${resource}\u0000${field}`;
    const hit = this.counts.get(key);
    if (hit !== undefined) {
      hit.count++;
      return;
    }
    if (this.counts.size >= PAIRS_MAX && field !== OTHER_FIELD) {
      this.add(resource, OTHER_FIELD);
      return;
    }
    this.counts.set(key, { resource, field, count: 1 });
  }

  /** Every count so far, in the order first seen. */
  entries(): InvalidCount[] {
    return [...this.counts.values()].map((c) => ({ ...c }));
  }

  /** The count of one pair (0 when none). */
  get(resource: string, field: string): number {
    return this.counts.get(`${resource}\u0000${field}`)?.count ?? 0;
  }
}
