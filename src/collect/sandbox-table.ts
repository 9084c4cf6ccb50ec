// A compact sandbox list for when nothing reads metadata: per-sandbox series and policy are off,
// so aggregates and churn need only id, template, state, CPU, memory, start and end times and the
// probe tag. Columns of typed arrays hold 100,000 sandboxes in a few MB instead of 100,000 objects
// in tens of MB. A table is always in ascending id order, each id once: churn then merges two
// tables without sorting, and a table can share the strings of equal ids with the one before it.
import { EMPTY_NUMBERS, EMPTY_STRINGS } from "../platform/normalize/normalize.js";
import { PROBE_TAG_KEY, type Sandbox } from "../platform/types.js";
import { type Columns, SandboxTableBuilder } from "./sandbox-table-builder.js";

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
  // A keyed load, not Object.hasOwn: metadata maps come in many shapes, and hasOwn on each was 6 %
  // of a first render's profile. Values are strings; no Object.prototype member has this name.
  return s.metadata[PROBE_TAG_KEY] !== undefined;
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

const absentIfNaN = (v: number): number | undefined => (Number.isNaN(v) ? undefined : v);

/**
 * A table's rows as its columns, read-only: for a reader that resolves each template and state
 * code once per table and keeps its own index by row (cost accounting), where a visitor would
 * pass every row's strings and times through a call. Numbers are NaN where a record had none.
 */
export interface TableRows {
  /** Ascending, each id once; the same string objects as the last table's where ids are equal. */
  readonly ids: readonly string[];
  /** Names by code: row i's are `templates[template[i]]` and `states[state[i]]`. */
  readonly templates: readonly string[];
  readonly states: readonly string[];
  readonly template: Readonly<Uint32Array>;
  readonly state: Readonly<Uint32Array>;
  readonly cpu: Readonly<Float64Array>;
  readonly memory: Readonly<Float64Array>;
  readonly started: Readonly<Float64Array>;
  readonly ends: Readonly<Float64Array>;
}

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

  /** The rows as columns (see TableRows); the table's own arrays, not copies. */
  rows(): TableRows {
    const { template, state, cpu, memory, started, ends } = this.cols;
    const { ids, templates, states } = this;
    return { ids, templates, states, template, state, cpu, memory, started, ends };
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
