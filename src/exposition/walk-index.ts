// Matches the sandboxes of a new walk to the records kept from the previous one. Walks come back
// in the same order cycle after cycle, so the next record in order is tried before the hash map:
// at 100,000 ids that is a sequential scan instead of 100,000 cache-missing Map lookups.

/** A record kept per id between walks. */
export interface WalkRecord {
  readonly id: string;
  /** Number of the walk that last kept the record; 0 for a record not kept yet. */
  walk: number;
  /** Index of the record in the walk that kept it. */
  pos: number;
}

/** Records of the previous walk, looked up in order with a Map as fallback. */
export class WalkIndex<R extends WalkRecord> {
  private prev: R[] = [];
  private next: R[] = [];
  private readonly byId = new Map<string, R>();
  private cursor = 0;
  private walk = 0;

  /** Starts a walk; returns its number (stamp records with it through `keep`). */
  begin(): number {
    this.next = [];
    this.cursor = 0;
    return ++this.walk;
  }

  /** The record of `id` from an earlier walk, or one already kept in this walk (a repeated id). */
  find(id: string): R | undefined {
    const c = this.prev[this.cursor];
    if (c !== undefined && c.id === id && c.walk !== this.walk) {
      this.cursor++;
      return c;
    }
    const r = this.byId.get(id);
    if (r !== undefined && r.walk !== this.walk) this.cursor = r.pos + 1;
    return r;
  }

  /** Keeps `r` (found, or new with walk 0) for the next walk. */
  keep(r: R): void {
    if (r.walk === 0) this.byId.set(r.id, r);
    r.walk = this.walk;
    r.pos = this.next.length;
    this.next.push(r);
  }

  /** Ends the walk: records not kept are dropped and handed to `gone`. */
  end(gone?: (r: R) => void): void {
    for (const r of this.prev) {
      if (r.walk === this.walk) continue;
      this.byId.delete(r.id);
      gone?.(r);
    }
    this.prev = this.next;
    this.next = [];
  }

  /** Number of records kept by the last finished walk. */
  get size(): number {
    return this.prev.length;
  }
}
