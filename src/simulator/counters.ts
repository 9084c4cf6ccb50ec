// Request counters by route template, so tests can assert what the exporter did to the platform.

/** Routes that change platform state (what a dry-run must never call). */
const MUTATING = new Set([
  "POST /sandboxes",
  "DELETE /sandboxes/{id}",
  "POST /sandboxes/{id}/pause",
  "POST /sandboxes/{id}/resume",
  "POST /sandboxes/{id}/connect",
]);

/** Counts requests by "METHOD /route/{id}" (prefix stripped, ids replaced by {id}). */
export class SimCounters {
  private readonly counts = new Map<string, number>();

  /** Records one request. */
  hit(route: string): void {
    this.counts.set(route, (this.counts.get(route) ?? 0) + 1);
  }
  /** Requests seen for one route, e.g. "GET /v2/sandboxes". */
  get(route: string): number {
    return this.counts.get(route) ?? 0;
  }
  /** All requests seen. */
  total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
  /** Create, delete, pause and resume requests seen (successful or not). */
  mutating(): number {
    let n = 0;
    for (const [k, v] of this.counts) if (MUTATING.has(k)) n += v;
    return n;
  }
  /** Forgets everything counted so far. */
  reset(): void {
    this.counts.clear();
  }
  /** A copy of the counts, keyed by route. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }
}
