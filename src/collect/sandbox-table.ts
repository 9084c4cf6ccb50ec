// A compact sandbox list for when nothing reads metadata: per-sandbox series and policy are off,
// so aggregates and churn need only id, template, state, CPU, memory, start and end times and the
// probe tag. Columns of typed arrays hold 100,000 sandboxes in a few MB instead of 100,000 objects
// in tens of MB. A table is always in ascending id order, each id once: churn then merges two
// tables without sorting, and a table can share the strings of equal ids with the one before it.
import { EMPTY_NUMBERS, EMPTY_STRINGS } from "../platform/normalize/normalize.js";
import { PROBE_TAG_KEY, type Sandbox } from "../platform/types.js";
import { idOrder } from "../util/id-order.js";

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

/** Every field a table keeps of a row: RowVisitor's, the end time and whether it is a probe's. */
export type FullRowVisitor = (
  id: string,
  templateId: string,
  state: string,
  cpuCount: number | undefined,
  memoryMB: number | undefined,
  startedAt: number | undefined,
  endAt: number | undefined,
  probe: boolean,
) => void;

/**
 * Visits every sandbox of `list` without making an object per row (a table's rows are columns;
 * 100,000 fresh objects per pass are tens of MB of garbage on every poll cycle).
 */
export function forEachRow(list: SandboxList, visit: RowVisitor): void {
  forEachFullRow(list, visit);
}

/** forEachRow with the end time and the probe tag as well. */
export function forEachFullRow(list: SandboxList, visit: FullRowVisitor): void {
  if (list instanceof SandboxTable) {
    list.forEachFullRow(visit);
    return;
  }
  for (const s of list) visitRecord(s, visit);
}

/**
 * forEachFullRow in slices: yields after every `slice` records of an array, so a render can give
 * the event loop a turn. A table is visited at once: its columns are several times faster to
 * visit than records.
 */
export function* visitFullRows(
  list: SandboxList,
  visit: FullRowVisitor,
  slice: number,
): Generator<void, void, void> {
  if (!Array.isArray(list)) {
    forEachFullRow(list, visit);
    return;
  }
  const records = list as readonly Sandbox[];
  for (let i = 0; i < records.length; i++) {
    if (i > 0 && i % slice === 0) yield;
    visitRecord(records[i] as Sandbox, visit);
  }
}

/** Whether the exporter's prober made this sandbox (it deletes its own). */
export function isProbeSandbox(s: Sandbox): boolean {
  return Object.hasOwn(s.metadata, PROBE_TAG_KEY);
}

function visitRecord(s: Sandbox, visit: FullRowVisitor): void {
  visit(
    s.id,
    s.templateId,
    s.state,
    s.cpuCount,
    s.memoryMB,
    s.startedAt,
    s.endAt,
    isProbeSandbox(s),
  );
}

const INITIAL_CAPACITY = 1024;

/** The typed-array columns of a table, one entry per row. */
interface Columns {
  template: Uint32Array;
  state: Uint32Array;
  /** 0: no probe tag; k: the tag `probeTags[k - 1]`. */
  probe: Uint32Array;
  /** NaN where the record had no value. */
  cpu: Float64Array;
  memory: Float64Array;
  started: Float64Array;
  ends: Float64Array;
}

type Column = Uint32Array | Float64Array;

/** `f` applied to every column, each keeping its type. */
function mapColumns(c: Columns, f: <A extends Column>(a: A) => A): Columns {
  return {
    template: f(c.template),
    state: f(c.state),
    probe: f(c.probe),
    cpu: f(c.cpu),
    memory: f(c.memory),
    started: f(c.started),
    ends: f(c.ends),
  };
}

/** A zeroed column of `a`'s type and `n` entries. */
function sameKind<A extends Column>(a: A, n: number): A {
  return (a instanceof Uint32Array ? new Uint32Array(n) : new Float64Array(n)) as A;
}

/** The entries of `a` at `rows`, in that order. */
function pickRows<A extends Column>(a: A, rows: ArrayLike<number>, n: number): A {
  const out = sameKind(a, n);
  for (let j = 0; j < n; j++) out[j] = a[rows[j] as number] as number;
  return out;
}

/** Columns of `n` zeroed entries. */
function emptyColumns(n: number): Columns {
  return {
    template: new Uint32Array(n),
    state: new Uint32Array(n),
    probe: new Uint32Array(n),
    cpu: new Float64Array(n),
    memory: new Float64Array(n),
    started: new Float64Array(n),
    ends: new Float64Array(n),
  };
}

const absentIfNaN = (v: number): number | undefined => (Number.isNaN(v) ? undefined : v);

/**
 * Sandboxes as columns, in ascending id order; iterating yields fresh objects without extra or
 * domain, and with no metadata but the probe tag.
 */
export class SandboxTable implements SandboxList {
  /** Metadata of a row by probe code: none, then one frozen map per probe tag. */
  private readonly probeMetadata: ReadonlyArray<Record<string, string>>;

  private constructor(
    private readonly ids: readonly string[],
    private readonly templates: readonly string[],
    private readonly states: readonly string[],
    probeTags: readonly string[],
    private readonly cols: Columns,
  ) {
    this.probeMetadata = [
      EMPTY_STRINGS,
      ...probeTags.map((tag) => Object.freeze({ [PROBE_TAG_KEY]: tag })),
    ];
  }

  get length(): number {
    return this.ids.length;
  }

  *[Symbol.iterator](): Iterator<Sandbox> {
    const c = this.cols;
    for (let i = 0; i < this.ids.length; i++) {
      yield {
        id: this.ids[i] as string,
        templateId: this.templates[c.template[i] as number] as string,
        state: this.states[c.state[i] as number] as string,
        cpuCount: absentIfNaN(c.cpu[i] as number),
        memoryMB: absentIfNaN(c.memory[i] as number),
        startedAt: absentIfNaN(c.started[i] as number),
        endAt: absentIfNaN(c.ends[i] as number),
        domain: undefined,
        metadata: this.probeMetadata[c.probe[i] as number] as Record<string, string>,
        extra: EMPTY_NUMBERS,
      };
    }
  }

  /** Visits every row as values (see forEachRow). */
  forEachRow(visit: RowVisitor): void {
    this.forEachFullRow(visit);
  }

  /** Visits every row as values, end time and probe tag included (see forEachFullRow). */
  forEachFullRow(visit: FullRowVisitor): void {
    const c = this.cols;
    for (let i = 0; i < this.ids.length; i++) {
      visit(
        this.ids[i] as string,
        this.templates[c.template[i] as number] as string,
        this.states[c.state[i] as number] as string,
        absentIfNaN(c.cpu[i] as number),
        absentIfNaN(c.memory[i] as number),
        absentIfNaN(c.started[i] as number),
        absentIfNaN(c.ends[i] as number),
        c.probe[i] !== 0,
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
  templates: string[],
  states: string[],
  probeTags: string[],
  cols: Columns,
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
  private cols: Columns;
  private readonly templates = new Codes();
  private readonly states = new Codes();
  private readonly probeTags = new Codes();

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
    this.cols = emptyColumns(capacity);
  }

  /** Adds one sandbox; of its metadata only the probe tag is kept. */
  push(s: Sandbox): void {
    const row = this.count++;
    if (row === this.cols.cpu.length) this.grow();
    if (this.ascending && row > 0 && !(s.id > (this.ids[row - 1] as string))) {
      this.ascending = false;
      this.previous = undefined;
    }
    const id = this.known(s.id);
    if (row < this.ids.length) this.ids[row] = id;
    else this.ids.push(id);
    const c = this.cols;
    c.template[row] = this.templates.code(s.templateId);
    c.state[row] = this.states.code(s.state);
    const tag = s.metadata[PROBE_TAG_KEY];
    c.probe[row] = tag === undefined ? 0 : this.probeTags.code(tag) + 1;
    c.cpu[row] = s.cpuCount ?? Number.NaN;
    c.memory[row] = s.memoryMB ?? Number.NaN;
    c.started[row] = s.startedAt ?? Number.NaN;
    c.ends[row] = s.endAt ?? Number.NaN;
  }

  /** The finished table. */
  build(): SandboxTable {
    const n = this.count;
    this.ids.length = n;
    if (!this.ascending) return this.sorted();
    // Views when little capacity is left over, copies when much is (a fleet that shrank).
    const trim = n * 8 >= this.cols.cpu.length * 7;
    return this.made(
      this.ids,
      mapColumns(this.cols, (a) => (trim ? a.subarray(0, n) : a.slice(0, n)) as typeof a),
    );
  }

  private made(ids: string[], cols: Columns): SandboxTable {
    return this.make(ids, this.templates.values, this.states.values, this.probeTags.values, cols);
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
    for (let j = 0; j < n; j++) out[j] = ids[order[j] as number] as string;
    return this.made(
      out,
      mapColumns(this.cols, (a) => pickRows(a, order, n)),
    );
  }

  private grow(): void {
    const size = this.cols.cpu.length * 2;
    this.cols = mapColumns(this.cols, (a) => {
      const b = sameKind(a, size);
      b.set(a);
      return b;
    });
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
