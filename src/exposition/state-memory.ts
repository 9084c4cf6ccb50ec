// Remembered values of a string state, so a state-set keeps its 0 series after a value goes away.

/** Bound on remembered values: a platform that puts free text in a status must not grow series forever. */
export const MAX_REMEMBERED_STATES = 32;

/** Every value seen this run (bounded, oldest absent ones forgotten first), in sorted order. */
export class StateMemory {
  private readonly seen = new Set<string>();

  constructor(private readonly limit = MAX_REMEMBERED_STATES) {}

  /** Records the current values and returns every value to export, sorted. */
  observe(current: Iterable<string>): string[] {
    const now = new Set(current);
    for (const v of now) {
      this.seen.delete(v);
      this.seen.add(v);
    }
    for (const v of this.seen) {
      if (this.seen.size <= Math.max(this.limit, now.size)) break;
      if (!now.has(v)) this.seen.delete(v);
    }
    return [...this.seen].sort();
  }
}
