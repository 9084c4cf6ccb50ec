// What the families of the platform's records (nodes, templates) share: a status state-set, a
// family per numeric field, the HELP suffix of cached values, one record per id.

import { type FamilyDescriptor, family, fieldFamily, labelNames } from "./descriptor.js";
import { type FieldMetric, fieldMetrics } from "./naming.js";
import { StateMemory } from "./state-memory.js";
import { type Family, labels } from "./text.js";
import type { ValueGuard } from "./value-guard.js";

/** HELP suffix: these values are the poller's, not read at scrape time. */
export function cached(endpoint: string): string {
  return `Cached from the last successful poll of GET ${endpoint}.`;
}

/**
 * A record kind's status as a state-set (`d` labels: the record's id label, then the status's);
 * remembers the values seen so each keeps a 0 series.
 */
export class StatusSet {
  private readonly memory = new StateMemory();

  constructor(
    private readonly ns: string,
    private readonly d: FamilyDescriptor<"gauge">,
  ) {}

  /** The family of these records' statuses. */
  render(items: ReadonlyArray<{ id: string; status: string }>, guard: ValueGuard): Family {
    const [kind = "id", status = "status"] = labelNames(this.d);
    const statuses = this.memory.observe(items.map((i) => i.status));
    const f = family(this.ns, this.d);
    for (const it of items)
      for (const st of statuses)
        f.add(
          labels(
            [
              [kind, it.id],
              [status, st],
            ],
            guard,
          ),
          st === it.status ? 1 : 0,
        );
    return f;
  }
}

/**
 * A family per numeric field of the records, of the generic descriptor `d` (its first label names
 * the record); a field whose metric name is taken goes to `skipped`.
 */
export function numericFamilies(
  ns: string,
  d: FamilyDescriptor<"gauge">,
  items: ReadonlyArray<{ id: string; numeric: Record<string, number> }>,
  reserved: ReadonlySet<string>,
  endpoint: string,
  skipped: (field: string) => void,
  guard: ValueGuard,
): Family[] {
  const { metrics, skipped: lost } = fieldMetrics(
    items.flatMap((i) => Object.keys(i.numeric)),
    reserved,
  );
  for (const f of lost) skipped(`${endpoint} ${f}`);
  const [kind = "id"] = labelNames(d);
  const out: Family[] = [];
  for (const [field, m] of sorted(metrics)) {
    const f = fieldFamily(ns, d, field, m.suffix);
    for (const it of items) {
      const v = it.numeric[field];
      if (v !== undefined) f.add(labels([[kind, it.id]], guard), (v * m.mul) / m.div);
    }
    out.push(f);
  }
  return out;
}

/** Field metrics in the order of their suffixes. */
export function sorted(metrics: Map<string, FieldMetric>): Array<[string, FieldMetric]> {
  return [...metrics].sort(([, a], [, b]) => (a.suffix < b.suffix ? -1 : 1));
}

/** Drops later records of an id already seen: two would be one duplicated series. */
export function uniqueById<T extends { id: string }>(items: readonly T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const i of items) {
    if (seen.has(i.id)) continue;
    seen.add(i.id);
    out.push(i);
  }
  return out;
}
