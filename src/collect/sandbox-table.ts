// A compact sandbox list for when nothing reads metadata: per-sandbox series and policy are off,
// so aggregates and churn need only id, template, state, CPU, memory and start time. Columns of
// typed arrays hold 100,000 sandboxes in a few MB instead of 100,000 objects in tens of MB.
// A table is always in ascending id order, each id once: churn then merges two tables without
// sorting, and a table can share the strings of equal ids with the one before it.
import { EMPTY_NUMBERS, EMPTY_STRINGS } from "../platform/normalize/normalize.js";
import type { Sandbox } from "../platform/types.js";
import { idOrder } from "../util/id-order.js";
import { inShard, ownShard } from "../util/shard.js";

/** What consumers of a snapshot's sandboxes may rely on: a length and iteration. */
export interface SandboxList extends Iterable<Sandbox> {
  readonly length: number;
}

/** The fields of one row, passed as values: a visitor has no object it could keep. */
export type RowVisitor = (
  id: string,
  templateId: string,
  state: string,
  cpuCount: number | undefined,
  memoryMB: number | undefined,
  startedAt: number | undefined,
) => void;

/** This shard's part of `list`, of the same kind: a table stays a table, records stay records. */
export function shardOfList(list: SandboxList, index: number, total: number): SandboxList {
  if (total <= 1) return list;
  if (list instanceof SandboxTable) return list.filter((id) => inShard(id, index, total));
  return ownShard(list, index, total);
}

/**
 * Visits every sandbox of `list` without making an object per row (a table's rows are columns;
 * 100,000 fresh objects per pass are tens of MB of garbage on every poll cycle).
 */
export function forEachRow(list: SandboxList, visit: RowVisitor): void {
  if (list instanceof SandboxTable) {
    list.forEachRow(visit);
    return;
  }
  for (const s of list) visit(s.id, s.templateId, s.state, s.cpuCount, s.memoryMB, s.startedAt);
}

const INITIAL_CAPACITY = 1024;

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

  /** The rows whose id `keep` accepts, as a table (columns copied; strings shared). */
  filter(keep: (id: string) => boolean): SandboxTable {
    const rows: number[] = [];
    for (let i = 0; i < this.ids.length; i++) if (keep(this.ids[i] as string)) rows.push(i);
    const pick = <A extends Uint32Array | Float64Array>(a: A, make: (n: number) => A): A => {
      const out = make(rows.length);
      for (let j = 0; j < rows.length; j++) out[j] = a[rows[j] as number] as number;
      return out;
    };
    return new SandboxTable(
      rows.map((i) => this.ids[i] as string),
      pick(this.templateIdx, (n) => new Uint32Array(n)),
      pick(this.stateIdx, (n) => new Uint32Array(n)),
      this.templates,
      this.states,
      pick(this.cpu, (n) => new Float64Array(n)),
      pick(this.memory, (n) => new Float64Array(n)),
      pick(this.started, (n) => new Float64Array(n)),
    );
  }

  /** Visits every row as values (see forEachRow). */
  forEachRow(visit: RowVisitor): void {
    for (let i = 0; i < this.ids.length; i++) {
      const cpu = this.cpu[i] as number;
      const memory = this.memory[i] as number;
      const started = this.started[i] as number;
      visit(
        this.ids[i] as string,
        this.templates[this.templateIdx[i] as number] as string,
        this.states[this.stateIdx[i] as number] as string,
        Number.isNaN(cpu) ? undefined : cpu,
        Number.isNaN(memory) ? undefined : memory,
        Number.isNaN(started) ? undefined : started,
      );
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
  private readonly templates = new Codes();
  private readonly states = new Codes();

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
    this.templateIdx[row] = this.templates.code(s.templateId);
    this.stateIdx[row] = this.states.code(s.state);
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
      this.templates.values,
      this.states.values,
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
    return this.make(
      out,
      templateIdx,
      stateIdx,
      this.templates.values,
      this.states.values,
      cpu,
      memory,
      started,
    );
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

/** Distinct values of one column (templates, states) and the code of each. */
class Codes {
  readonly values: string[] = [];
  private readonly index = new Map<string, number>();
  private last: string | undefined;
  private lastCode = 0;

  /** The code of `value`; runs of one value (common in a walk) skip the map. */
  code(value: string): number {
    if (value === this.last) return this.lastCode;
    let i = this.index.get(value);
    if (i === undefined) {
      i = this.values.length;
      this.values.push(value);
      this.index.set(value, i);
    }
    this.last = value;
    this.lastCode = i;
    return i;
  }
}
