// The sandboxes the cost accountant tracks, as columns: one slot per sandbox, a typed array per
// number, 45 bytes a slot, so 100,000 sandboxes take about 4.8 MB and no object per sandbox for the
// collector to trace. The only per-sandbox heap is the id map; its keys are the walk's own id
// strings (JSON.parse makes sequential strings, not slices of the page's body, and a table reuses
// them walk to walk), so keeping them costs no string memory. A table's walk finds slots by row
// (row-slots.ts); the map serves records, events, the policy and rows new to the last table.

export const RUNNING = 1;
export const PAUSED = 2;
export const OTHER = 3;
export const GONE = 4;
export type Phase = typeof RUNNING | typeof PAUSED | typeof OTHER | typeof GONE;

const INITIAL_SLOTS = 1024;
/** Growth past what a walk announced: small steps, the columns are the feature's main memory. */
const GROWTH = 1.25;
/** Headroom over a walk's length, so a fleet that grew a little still fits in one allocation. */
const HEADROOM = 1.0625;

type Column = Float64Array | Float32Array | Uint8Array | Uint32Array;

/** A column of `a`'s type with `n` entries, `a`'s first. */
function widened<A extends Column>(a: A, n: number): A {
  const b = new (a.constructor as new (n: number) => A)(n);
  b.set(a);
  return b;
}

/** The tracked sandboxes; the accountant reads and writes the columns by slot. */
export class TrackTable {
  /** Slot by sandbox id. */
  readonly slots = new Map<string, number>();
  /** Slots handed out so far (free ones included). */
  private used = 0;
  private readonly free: number[] = [];
  /** One value per attributeBy key; undefined until a record or event carries metadata. */
  readonly attr: (string[] | undefined)[] = [];
  /** Index of the slot's template totals (the accountant's list). */
  template = new Uint32Array(0);
  phase = new Uint8Array(0);
  /**
   * vCPUs and MB in 4 bytes each: exact for every count the accountant accepts with at most 24
   * significant bits (whole vCPUs, halves, quarters; whole MB up to its 16 TiB bound); any other
   * rounds by at most 6e-8 of itself. The 8 bytes a slot saved pay for RowSlots' 8 bytes a row.
   */
  cpu = new Float32Array(0);
  memMB = new Float32Array(0);
  /** When the current span began (ms after origin); for a gone one, its end. */
  spanStart = new Float64Array(0);
  /** Ms of the current span already counted. */
  counted = new Float64Array(0);
  endAt = new Float64Array(0);
  /** The last walk that listed it (NaN: none yet); when it went, for a gone one. */
  seenAt = new Float64Array(0);
  /**
   * The last running span closed (start NaN: none), for a late event's correction; empty (reads
   * undefined) until keepClosedSpans, as no event can come before an event source is wired.
   */
  closedStart = new Float64Array(0);
  closedCounted = new Float64Array(0);
  /**
   * The guessed end of the last closed span while its event may still come (NaN: settled): the
   * span is counted only to the last walk that saw it running until the event or the grace ends.
   */
  pendingEnd = new Float64Array(0);
  keepsClosed = false;

  /** @param attributed whether any attributeBy key is set (else `attr` stays empty). */
  constructor(private readonly attributed: boolean) {}

  /** From now on the last closed running span of each slot is kept (24 bytes a slot). */
  keepClosedSpans(): void {
    if (this.keepsClosed) return;
    this.keepsClosed = true;
    this.closedStart = new Float64Array(this.phase.length).fill(Number.NaN);
    this.closedCounted = new Float64Array(this.phase.length);
    this.pendingEnd = new Float64Array(this.phase.length).fill(Number.NaN);
  }

  /**
   * Records that slot `t`'s running span from `start` closed with `counted` ms counted, and the
   * end guessed for it while its event may still come (NaN: none, the end is known).
   */
  closeSpan(t: number, start: number, counted: number, pending = Number.NaN): void {
    if (!this.keepsClosed) return;
    this.closedStart[t] = start;
    this.closedCounted[t] = counted;
    this.pendingEnd[t] = pending;
  }

  /** Room for `n` sandboxes at once (a walk's length), so the first walk allocates once. */
  reserve(n: number): void {
    if (n > this.phase.length) this.grow(Math.ceil(n * HEADROOM));
  }

  /** A new slot for `id` of template `template`, its numbers NaN or 0. */
  add(id: string, template: number): number {
    let t = this.free.pop();
    if (t === undefined) {
      t = this.used++;
      if (t >= this.phase.length)
        this.grow(Math.max(INITIAL_SLOTS, Math.ceil(this.phase.length * GROWTH)));
    }
    this.slots.set(id, t);
    this.template[t] = template;
    if (this.attributed) this.attr[t] = undefined;
    this.cpu[t] = Number.NaN;
    this.memMB[t] = Number.NaN;
    this.counted[t] = 0;
    this.endAt[t] = Number.NaN;
    this.seenAt[t] = Number.NaN;
    this.closeSpan(t, Number.NaN, 0);
    return t;
  }

  /** Frees the slot `t` of `id`. */
  remove(id: string, t: number): void {
    this.slots.delete(id);
    if (this.attributed) this.attr[t] = undefined;
    this.free.push(t);
  }

  private grow(n: number): void {
    this.template = widened(this.template, n);
    this.phase = widened(this.phase, n);
    this.cpu = widened(this.cpu, n);
    this.memMB = widened(this.memMB, n);
    this.spanStart = widened(this.spanStart, n);
    this.counted = widened(this.counted, n);
    this.endAt = widened(this.endAt, n);
    this.seenAt = widened(this.seenAt, n);
    if (!this.keepsClosed) return;
    this.closedStart = widened(this.closedStart, n);
    this.closedCounted = widened(this.closedCounted, n);
    this.pendingEnd = widened(this.pendingEnd, n);
  }
}
