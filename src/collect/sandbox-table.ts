// A compact sandbox list for when nothing reads metadata: per-sandbox series and policy are off,
// so aggregates and churn need only id, template, state, CPU, memory and start time. Columns of
// typed arrays hold 100,000 sandboxes in a few MB instead of 100,000 objects in tens of MB.
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

/** Sandboxes as columns; iterating yields fresh objects without metadata, extra, domain or endAt. */
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
    /** Ids in strictly ascending order (no row was replaced or sorted in out of order). */
    private readonly ascending: boolean,
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
   * Builds a table row by row; a repeated id replaces the earlier row (the last record wins).
   * `previous` (the last walk's list) sizes the columns once: grown step by step, 100,000 rows
   * reallocate each column a dozen times, and the large copies land in the old generation. When
   * both walks come in id order, ids equal to the previous table's are stored as its strings: the
   * freshly parsed copies then die young instead of being promoted, 4 MB per cycle at 100,000.
   */
  static builder(previous?: SandboxList): SandboxTableBuilder {
    const reuse = previous instanceof SandboxTable && previous.ascending ? previous.ids : undefined;
    return new SandboxTableBuilder((...a) => new SandboxTable(...a), previous?.length ?? 0, reuse);
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
  ascending: boolean,
) => SandboxTable;

/** Collects rows for a SandboxTable; `build` trims the columns to the rows held. */
export class SandboxTableBuilder {
  /** Ids by row; slots from `count` on are free capacity. */
  private readonly ids: string[];
  private count = 0;
  /** id -> row; built only once ids stop arriving in ascending order (pages usually are sorted). */
  private rowOf: Map<string, number> | undefined;
  private templateIdx: Uint32Array;
  private stateIdx: Uint32Array;
  private cpu: Float64Array;
  private memory: Float64Array;
  private started: Float64Array;
  private readonly templates: string[] = [];
  private readonly templateOf = new Map<string, number>();
  private readonly states: string[] = [];
  private readonly stateOf = new Map<string, number>();

  /** Position in `previous`: ids before it are smaller than the last id pushed. */
  private previousAt = 0;

  constructor(
    private readonly make: Make,
    expected: number,
    /** The last table's ids, ascending; undefined once this walk is out of order. */
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
    let row = this.rowFor(s.id);
    if (row === undefined) {
      row = this.count++;
      if (row === this.cpu.length) this.grow();
      const id = this.known(s.id);
      if (row < this.ids.length) this.ids[row] = id;
      else this.ids.push(id);
      this.rowOf?.set(id, row);
    }
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
      this.rowOf === undefined,
    );
  }

  /** The previous table's string equal to `id` (ascending walks only), else `id` itself. */
  private known(id: string): string {
    const prev = this.previous;
    if (prev === undefined) return id;
    let at = this.previousAt;
    while (at < prev.length && (prev[at] as string) < id) at++;
    this.previousAt = at;
    return prev[at] === id ? (prev[at] as string) : id;
  }

  /** The row already holding `id`, if any; ascending ids cannot repeat, so need no lookup. */
  private rowFor(id: string): number | undefined {
    if (this.rowOf) return this.rowOf.get(id);
    const last = this.count > 0 ? this.ids[this.count - 1] : undefined;
    if (last === undefined || id > last) return undefined;
    this.previous = undefined;
    const rowOf = new Map<string, number>();
    for (let i = 0; i < this.count; i++) rowOf.set(this.ids[i] as string, i);
    this.rowOf = rowOf;
    return rowOf.get(id);
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
