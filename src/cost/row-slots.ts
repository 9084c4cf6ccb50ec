// The track slot of each row of the last table walked, so the next walk finds a sandbox's slot by
// position instead of hashing its id (a map lookup per row was the largest part of the pass: 16 ms
// CPU for 100,000 probes into a 100,000-entry map, of a 40 ms pass, on a busy 2-core machine).
// Tables are in ascending id order, so the rows of two walks are merged by one cursor; ids equal
// in both are mostly the same strings (a table reuses the last one's), so a match is a pointer
// comparison. Two buffers of 4 bytes a row, swapped walk to walk; the ids are the table's own
// array, kept by the snapshot anyway.

/** No slot: the row was dropped, or it is not in the last table. */
export const NO_SLOT = -1;
/** Headroom over a table's length, so a fleet that grew a little still fits. */
const HEADROOM = 1.0625;

/** Slots by row of the last table, and of the one being walked. */
export class RowSlots {
  /** The last table's ids and the slot of each row (NO_SLOT: none). */
  private ids: readonly string[] = [];
  private slots = new Int32Array(0);
  /** The table being walked: its ids and the slots found so far. */
  private nextIds: readonly string[] = [];
  private next = new Int32Array(0);
  /** Position in `ids`: every id before it is smaller than the row being walked. */
  private cursor = 0;

  /** A walk of a table with these ids (ascending) begins. */
  begin(ids: readonly string[]): void {
    this.nextIds = ids;
    this.cursor = 0;
    if (this.next.length < ids.length) this.next = new Int32Array(Math.ceil(ids.length * HEADROOM));
  }

  /**
   * The slot the last table held for `id`, the next row of the walk in id order; NO_SLOT when
   * it was not there. A row out of order only misses (the caller then looks the id up).
   */
  find(id: string): number {
    const ids = this.ids;
    let j = this.cursor;
    while (j < ids.length && ids[j] !== id && (ids[j] as string) < id) j++;
    if (j < ids.length && ids[j] === id) {
      this.cursor = j + 1;
      return this.slots[j] as number;
    }
    this.cursor = j;
    return NO_SLOT;
  }

  /** Row `row` of the table being walked has slot `slot`. */
  set(row: number, slot: number): void {
    this.next[row] = slot;
  }

  /** The walk is done: its table is the one to look in next. */
  end(): void {
    const slots = this.slots;
    this.slots = this.next;
    this.next = slots;
    this.ids = this.nextIds;
    this.nextIds = [];
  }

  /** Forgets the last table (a walk that came as records may have freed its slots). */
  forget(): void {
    this.ids = [];
  }
}
