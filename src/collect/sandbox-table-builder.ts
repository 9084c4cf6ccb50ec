// Builds a SandboxTable (sandbox-table.ts) from a walk: rows as they come, then in id order, each id
// once, the columns trimmed to the rows held.
import { PROBE_TAG_KEY, type Sandbox } from "../platform/types.js";
import { idOrder } from "../util/id-order.js";
import type { SandboxTable } from "./sandbox-table.js";

const INITIAL_CAPACITY = 1024;

/** The typed-array columns of a table, one entry per row. */
export interface Columns {
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

/** Makes the table (its constructor is the table's own). */
export type Make = (
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
