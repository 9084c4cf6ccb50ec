// A compact sandbox list for when nothing reads metadata: per-sandbox series and policy are off,
// so aggregates and churn need only id, template, state, CPU, memory and start time. Columns of
// typed arrays hold 100,000 sandboxes in a few MB instead of 100,000 objects in tens of MB.
// A table is always in ascending id order, each id once: churn then merges two tables without
// sorting, and a table can share the strings of equal ids with the one before it.
import { EMPTY_NUMBERS, EMPTY_STRINGS } from "../platform/normalize.js";
import type { Sandbox } from "../platform/types.js";
import { inShard } from "../util/shard.js";

/** What consumers of a snapshot's sandboxes may rely on: a length and iteration. */
export interface SandboxList extends Iterable<Sandbox> {
  readonly length: number;
  /**
   * Visits every sandbox without allocating one object each: the object passed may be reused for
   * the next call, so read it during the call and keep none of it (iterate to keep objects).
   */
  forEach(visit: (s: Sandbox) => void): void;
}

const INITIAL_CAPACITY = 1024;

/** The sandboxes of one shard of `list`, as an array. */
export function ownShard(list: SandboxList, index: number, total: number): Sandbox[] {
  const out: Sandbox[] = [];
  for (const s of list) if (inShard(s.id, index, total)) out.push(s);
  return out;
}

/**
 * Sandboxes as columns, in ascending id order; iterating yields fresh objects without metadata,
 * extra, domain or endAt.
 */
export class SandboxTable implements SandboxList {
  private constructor(
    private readonly ids: readonly string[],
    private readonly templateIdx: Uint32Array,
    private readonly stateIdx: Uint32Array,
    private readonly templates: readonly string[],
    private readonly states: readonly string[],
    /** NaN where the record had no value. */
    private readonly cpu: Float64Array,
    private readonly memory: Float64Array,
    private readonly started: Float64Array,
  ) {}

  get length(): number {
    return this.ids.length;
  }

  *[Symbol.iterator](): Iterator<Sandbox> {
    for (let i = 0; i < this.ids.length; i++) {
      const cpu = this.cpu[i] as number;
      const memory = this.memory[i] as number;
      const started = this.started[i] as number;
      yield {
        id: this.ids[i] as string,
        templateId: this.templates[this.templateIdx[i] as number] as string,
        state: this.states[this.stateIdx[i] as number] as string,
        cpuCount: Number.isNaN(cpu) ? undefined : cpu,
        memoryMB: Number.isNaN(memory) ? undefined : memory,
        startedAt: Number.isNaN(started) ? undefined : started,
        endAt: undefined,
        domain: undefined,
        metadata: EMPTY_STRINGS,
        extra: EMPTY_NUMBERS,
      };
    }
  }

  forEach(visit: (s: Sandbox) => void): void {
    // One row object, refilled for each visit: 100,000 fresh objects per pass cost tens of MB of
    // garbage on every poll cycle, where the aggregates and churn only read the fields.
    const row: { -readonly [K in keyof Sandbox]: Sandbox[K] } = {
      id: "",
      templateId: "",
      state: "",
      cpuCount: undefined,
      memoryMB: undefined,
      startedAt: undefined,
      endAt: undefined,
      domain: undefined,
      metadata: EMPTY_STRINGS,
      extra: EMPTY_NUMBERS,
    };
    for (let i = 0; i < this.ids.length; i++) {
      const cpu = this.cpu[i] as number;
      const memory = this.memory[i] as number;
      const started = this.started[i] as number;
      row.id = this.ids[i] as string;
      row.templateId = this.templates[this.templateIdx[i] as number] as string;
      row.state = this.states[this.stateIdx[i] as number] as string;
      row.cpuCount = Number.isNaN(cpu) ? undefined : cpu;
      row.memoryMB = Number.isNaN(memory) ? undefined : memory;
      row.startedAt = Number.isNaN(started) ? undefined : started;
      visit(row);
    }
  }

  /**
   * Builds a table row by row; a repeated id keeps its last record. `previous` (the last walk's
   * list) sizes the columns once: grown step by step, 100,000 rows reallocate each column a dozen
   * times, and the large copies land in the old generation. While the walk comes in id order,
   * ids equal to the previous table's are stored as its strings: the freshly parsed copies then
   * die young instead of being promoted, 4 MB per cycle at 100,000.
   */
  static builder(previous?: SandboxList): SandboxTableBuilder {
    const before = previous instanceof SandboxTable ? previous.ids : undefined;
    return new SandboxTableBuilder((...a) => new SandboxTable(...a), previous?.length ?? 0, before);
  }
}

type Make = (
  ids: string[],
  templateIdx: Uint32Array,
  stateIdx: Uint32Array,
  templates: string[],
  states: string[],
  cpu: Float64Array,
  memory: Float64Array,
  started: Float64Array,
) => SandboxTable;

/**
 * Collects rows for a SandboxTable in walk order; `build` puts them in id order (a walk in id
 * order, as paged by id, needs no sort) and trims the columns to the rows held.
 */
export class SandboxTableBuilder {
  /** Ids by row; slots from `count` on are free capacity. */
  private readonly ids: string[];
  private count = 0;
  /** Every id so far is greater than the one before it. */
  private ascending = true;
  private templateIdx: Uint32Array;
  private stateIdx: Uint32Array;
  private cpu: Float64Array;
  private memory: Float64Array;
  private started: Float64Array;
  private readonly templates: string[] = [];
  private readonly templateOf = new Map<string, number>();
  private readonly states: string[] = [];
  private readonly stateOf = new Map<string, number>();

  /** Position in `previous`: the ids before it are smaller than the last id pushed. */
  private previousAt = 0;

  constructor(
    private readonly make: Make,
    expected: number,
    /** The last table's ids (ascending), whose strings equal ids reuse while the walk ascends. */
    private previous: readonly string[] | undefined,
  ) {
    // A little headroom, so a fleet that grew by a few sandboxes still fits in one allocation.
    const capacity = Math.max(INITIAL_CAPACITY, Math.ceil(expected * 1.0625));
    this.ids = new Array<string>(capacity);
    this.templateIdx = new Uint32Array(capacity);
    this.stateIdx = new Uint32Array(capacity);
    this.cpu = new Float64Array(capacity);
    this.memory = new Float64Array(capacity);
    this.started = new Float64Array(capacity);
  }

  /** Adds one sandbox. */
  push(s: Sandbox): void {
    const row = this.count++;
    if (row === this.cpu.length) this.grow();
    if (this.ascending && row > 0 && !(s.id > (this.ids[row - 1] as string))) {
      this.ascending = false;
      this.previous = undefined;
    }
    const id = this.known(s.id);
    if (row < this.ids.length) this.ids[row] = id;
    else this.ids.push(id);
    this.templateIdx[row] = code(s.templateId, this.templates, this.templateOf);
    this.stateIdx[row] = code(s.state, this.states, this.stateOf);
    this.cpu[row] = s.cpuCount ?? Number.NaN;
    this.memory[row] = s.memoryMB ?? Number.NaN;
    this.started[row] = s.startedAt ?? Number.NaN;
  }

  /** The finished table. */
  build(): SandboxTable {
    const n = this.count;
    this.ids.length = n;
    if (!this.ascending) return this.sorted();
    // Views when little capacity is left over, copies when much is (a fleet that shrank).
    const trim = n * 8 >= this.cpu.length * 7;
    const cut = <A extends Uint32Array | Float64Array>(a: A): A =>
      (trim ? a.subarray(0, n) : a.slice(0, n)) as A;
    return this.make(
      this.ids,
      cut(this.templateIdx),
      cut(this.stateIdx),
      this.templates,
      this.states,
      cut(this.cpu),
      cut(this.memory),
      cut(this.started),
    );
  }

  /**
   * The previous table's string equal to `id`, else `id`. Stored now, while the walk ascends,
   * the freshly parsed copy dies young; replaced after the walk, it would already have been
   * promoted through the scavenges of the walk.
   */
  private known(id: string): string {
    const prev = this.previous;
    if (prev === undefined) return id;
    let at = this.previousAt;
    while (at < prev.length && (prev[at] as string) < id) at++;
    this.previousAt = at;
    return prev[at] === id ? (prev[at] as string) : id;
  }

  /**
   * The rows in id order, each id once with its last record: one sort per walk that came in
   * another order (E2B pages newest first), where a map of every id would cost as much and
   * churn would still have to sort.
   */
  private sorted(): SandboxTable {
    const ids = this.ids;
    const order = idOrder(ids);
    let n = 0;
    for (let k = 0; k < order.length; k++) {
      const row = order[k] as number;
      const next = order[k + 1];
      if (next === undefined || ids[next] !== ids[row]) order[n++] = row;
    }
    const out = new Array<string>(n);
    const templateIdx = new Uint32Array(n);
    const stateIdx = new Uint32Array(n);
    const cpu = new Float64Array(n);
    const memory = new Float64Array(n);
    const started = new Float64Array(n);
    for (let j = 0; j < n; j++) {
      const row = order[j] as number;
      out[j] = ids[row] as string;
      templateIdx[j] = this.templateIdx[row] as number;
      stateIdx[j] = this.stateIdx[row] as number;
      cpu[j] = this.cpu[row] as number;
      memory[j] = this.memory[row] as number;
      started[j] = this.started[row] as number;
    }
    return this.make(out, templateIdx, stateIdx, this.templates, this.states, cpu, memory, started);
  }

  private grow(): void {
    const size = this.cpu.length * 2;
    const widen = <A extends Uint32Array | Float64Array>(a: A, make: (n: number) => A): A => {
      const b = make(size);
      b.set(a);
      return b;
    };
    this.templateIdx = widen(this.templateIdx, (n) => new Uint32Array(n));
    this.stateIdx = widen(this.stateIdx, (n) => new Uint32Array(n));
    this.cpu = widen(this.cpu, (n) => new Float64Array(n));
    this.memory = widen(this.memory, (n) => new Float64Array(n));
    this.started = widen(this.started, (n) => new Float64Array(n));
  }
}

/** Most buckets of the counting pass (a Uint32Array of this many entries). */
const MAX_BUCKETS = 1 << 16;
/** Buckets this small are sorted by insertion, in place. */
const SMALL_BUCKET = 12;
/** A character's digit: 0 past the end, else its code plus one, capped at 127. */
const DIGITS = 128;

/**
 * Rows of `ids` in ascending id order, equal ids in row order. A counting pass on the characters
 * after the prefix all ids share (as many as fit MAX_BUCKETS once each position's alphabet is
 * ranked: three for base-36 ids) cuts the rows into buckets already in order; each bucket is then
 * sorted alone. Random ids of 100,000 sandboxes leave buckets of two or three rows.
 */
export function idOrder(ids: readonly string[]): number[] {
  const n = ids.length;
  const first = ids[0] ?? "";
  let at = first.length;
  for (let i = 1; i < n && at > 0; i++) {
    const id = ids[i] as string;
    let k = 0;
    while (k < at && id.charCodeAt(k) === first.charCodeAt(k)) k++;
    at = k;
  }
  // Rank each position's digits (0 always ranked, for the digits after a capped one).
  const ranks: Int32Array[] = [];
  const sizes: number[] = [];
  let buckets = 1;
  for (let p = at; ranks.length < 4; p++) {
    const seen = new Uint8Array(DIGITS);
    seen[0] = 1;
    for (let i = 0; i < n; i++) seen[digit(ids[i] as string, p)] = 1;
    const rank = new Int32Array(DIGITS);
    let size = 0;
    for (let d = 0; d < DIGITS; d++) if (seen[d]) rank[d] = size++;
    if (ranks.length > 0 && buckets * size > MAX_BUCKETS) break;
    ranks.push(rank);
    buckets *= size;
    sizes.push(size);
    if (size === 1) break;
  }
  // A position weighs the product of the alphabets after it, so earlier characters weigh more.
  const weights = new Array<number>(sizes.length);
  for (let j = sizes.length - 1, w = 1; j >= 0; w *= sizes[j] as number, j--) weights[j] = w;
  const keys = new Uint32Array(n);
  const start = new Uint32Array(buckets + 1);
  for (let i = 0; i < n; i++) {
    const id = ids[i] as string;
    let k = 0;
    for (let j = 0; j < ranks.length; j++) {
      const d = digit(id, at + j);
      k += ((ranks[j] as Int32Array)[d] as number) * (weights[j] as number);
      // A capped character hides what differs, so the characters after it must not split ids.
      if (d === DIGITS - 1) break;
    }
    keys[i] = k;
    (start[k + 1] as number)++;
  }
  for (let b = 0; b < buckets; b++) (start[b + 1] as number) += start[b] as number;
  const order = new Array<number>(n);
  const fill = start.slice(0, buckets);
  for (let i = 0; i < n; i++) {
    const b = keys[i] as number;
    order[fill[b] as number] = i;
    (fill[b] as number)++;
  }
  const before = (x: number, y: number): boolean => {
    const p = ids[x] as string;
    const q = ids[y] as string;
    return p < q || (p === q && x < y);
  };
  for (let b = 0; b < buckets; b++) {
    const from = start[b] as number;
    const to = start[b + 1] as number;
    if (to - from < 2) continue;
    if (to - from <= SMALL_BUCKET) {
      for (let i = from + 1; i < to; i++) {
        const row = order[i] as number;
        let j = i - 1;
        while (j >= from && before(row, order[j] as number)) {
          order[j + 1] = order[j] as number;
          j--;
        }
        order[j + 1] = row;
      }
      continue;
    }
    const part = order.slice(from, to).sort((x, y) => (before(x, y) ? -1 : 1));
    for (let j = 0; j < part.length; j++) order[from + j] = part[j] as number;
  }
  return order;
}

/** The digit of `id`'s character at `i`: 0 past the end, else its code plus one, capped. */
function digit(id: string, i: number): number {
  return i < id.length ? Math.min(id.charCodeAt(i), DIGITS - 2) + 1 : 0;
}

function code(value: string, values: string[], index: Map<string, number>): number {
  // Runs of one template or state are common; the last value is checked before the map.
  const lastAt = values.length - 1;
  if (lastAt >= 0 && values[lastAt] === value) return lastAt;
  let i = index.get(value);
  if (i === undefined) {
    i = values.length;
    values.push(value);
    index.set(value, i);
  }
  return i;
}
