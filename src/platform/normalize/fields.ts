// Field spellings per resource and the operator's field map compiled over them into tables that
// remember, per record shape, which spelling each field uses (one set of tables per Normalizer).
import type { KeyInfo, KeyNames } from "./collect.js";
import type { InvalidValues } from "./invalid-values.js";
import { isRecord, looseKey, snakeCase } from "./values.js";

type Json = Record<string, unknown>;

/** Our field name -> the platform's JSON key, per resource; overrides the built-in spellings. */
export interface FieldMap {
  sandbox?: Record<string, string>;
  node?: Record<string, string>;
  template?: Record<string, string>;
  log?: Record<string, string>;
  list?: Record<string, string>;
}

/** Built-in spellings, most specific first; the first present (non-null) one wins. */
export const SPELLINGS = {
  sandbox: {
    id: ["sandboxID", "sandboxId", "sandbox_id", "id"],
    templateId: ["templateID", "templateId", "template_id", "template"],
    state: ["state", "status"],
    cpuCount: ["cpuCount", "cpu_count", "cpu", "cpus"],
    memoryMB: ["memoryMB", "memoryMb", "memory_mb", "memory"],
    startedAt: ["startedAt", "startTime", "started_at", "start_time", "createdAt", "created_at"],
    endAt: ["endAt", "end_at"],
    metadata: ["metadata", "labels"],
    domain: ["domain"],
  },
  node: {
    id: ["nodeID", "nodeId", "node_id", "id"],
    status: ["status", "state"],
  },
  template: {
    id: ["templateID", "templateId", "template_id", "id"],
    status: ["status", "state", "buildStatus", "build_status"],
    // An explicit version beats the build id, which is E2B's only version-like field.
    version: ["version", "buildID", "buildId", "build_id"],
    replicas: ["replicas", "replicaCount", "replica_count"],
    error: ["error", "errorMessage", "error_message"],
  },
  log: {
    timestamp: ["timestamp", "time", "ts", "@timestamp", "createdAt", "created_at"],
    message: ["message", "line", "msg", "log"],
  },
  list: {
    items: ["sandboxes", "items", "data", "nodes", "templates", "entries", "logs", "results"],
    nextToken: ["nextToken", "next_token", "cursor", "nextCursor", "next_cursor", "next"],
    nextTokenHeader: ["x-next-token"],
  },
} as const;

/** A kind of platform record with its own spellings. */
export type Resource = keyof typeof SPELLINGS;

/**
 * Objects whose fields join the record's own (`metrics.allocatedCPU` -> `allocated_cpu`, not
 * `metrics_allocated_cpu`): E2B nests under `metrics` what the other flavor sends flat, and a
 * metric name must not depend on the flavor. A field the record carries at the top wins.
 */
const INLINE_OBJECTS: { readonly [R in Resource]?: readonly string[] } = { node: ["metrics"] };

/** Field names a field map may override, per resource (for config validation). */
export const FIELD_NAMES: { readonly [R in Resource]: readonly string[] } = {
  sandbox: Object.keys(SPELLINGS.sandbox),
  node: Object.keys(SPELLINGS.node),
  template: Object.keys(SPELLINGS.template),
  log: Object.keys(SPELLINGS.log),
  list: Object.keys(SPELLINGS.list),
};

/** A key, or a dotted path through nested objects (only from a field map). */
export type Candidate = string | readonly string[];

/** One of our fields: the keys it may be spelled as, in order of preference. */
export class FieldSpec {
  /** `a|b|c`, for messages that tell the operator what was looked for. */
  readonly names: string;
  /** The field's snake_case name (`end_at`): the `field` label of the values dropped. */
  readonly label: string;
  private readonly memoizable: boolean;
  /**
   * A key of the record shape `memoShape` such that no better-ranked spelling is in that shape:
   * the field's value whenever it is not null there. null: the shape has no spelling of the field.
   */
  private memo: string | null = null;
  /** The table shape the memo was worked out on; 0: none. */
  private memoShape = 0;

  /** `loose`: loose spellings (see looseKey) -> rank, tried only when no exact spelling is present. */
  constructor(
    field: string,
    readonly cands: readonly Candidate[],
    private readonly loose?: ReadonlyMap<string, number>,
  ) {
    this.label = snakeCase(field);
    this.names = cands.filter((c) => typeof c === "string").join("|");
    this.memoizable = cands.every((c) => typeof c === "string");
  }

  /**
   * The first present, non-null value. When the memo was worked out on the table's current shape
   * (the record has exactly the keys of the one it was read on), a better-ranked spelling cannot
   * be present, so one keyed read is enough. A field not read under the current shape (a slim read
   * skips some) reads every spelling. A table whose shape is 0 (no key walk) never uses the memo.
   */
  read(obj: Json, table: FieldTable): unknown {
    const shape = table.shape;
    if (shape !== 0 && this.memoShape === shape) {
      const memo = this.memo;
      if (memo === null) return undefined;
      const v = obj[memo];
      if (v !== null && v !== undefined) return v;
    }
    return this.scan(obj, table, true);
  }

  /**
   * The value `read` finds, without trusting or changing the memo: safe on a record whose key walk
   * has not run (the shard check reads a list item's id before deciding to normalize it).
   */
  peek(obj: Json, table: FieldTable): unknown {
    return this.scan(obj, table, false);
  }

  /** Every spelling in rank order, then the loose ones; `remember`: memo the spelling found. */
  private scan(obj: Json, table: FieldTable, remember: boolean): unknown {
    let first: string | null = null;
    let found: unknown;
    for (let i = 0; i < this.cands.length; i++) {
      const c = this.cands[i] as Candidate;
      const v = typeof c === "string" ? obj[c] : walk(obj, c);
      if (v === undefined) continue;
      if (first === null && typeof c === "string") first = c;
      if (v !== null) {
        found = v;
        break;
      }
    }
    if (first === null && this.loose) {
      // Only when no exact spelling is there at all: PascalCase Go structs, SCREAMING keys.
      let best = Number.POSITIVE_INFINITY;
      for (const k in obj) {
        const rank = this.loose.get(table.names.loose(k));
        if (rank !== undefined && rank < best && obj[k] !== undefined) {
          best = rank;
          first = k;
        }
      }
      if (first !== null) found = obj[first] ?? undefined;
    }
    if (remember && this.memoizable) {
      this.memo = first;
      this.memoShape = table.shape;
    }
    return found;
  }
}

/**
 * Spellings of every field of one resource after the field map, the keys they claim, and what
 * the last record looked like. Records of one list share their keys in one order, so the key walk
 * compares each key with the one at the same position last time (a pointer comparison of interned
 * strings) instead of hashing it, and fields are read with one keyed load each. A table belongs to
 * one Normalizer: its memos describe the records that one normalizer was given.
 */
export class FieldTable<F extends string = string> {
  /** Keys of the last record, by position, and what each means (undefined: claimed by a field). */
  readonly keys: string[] = [];
  readonly infos: Array<KeyInfo | undefined> = [];
  length = 0;
  /**
   * Generation of the current record shape: a new one whenever the key walk (collectFields) meets
   * keys other than the last record's. 0: no record walked yet.
   */
  shape = 0;
  /** The last numeric map handed out (see shareIfSame) and its size. */
  lastNumeric: Readonly<Record<string, number>> | undefined = undefined;
  lastNumericSize = 0;

  constructor(
    readonly fields: { readonly [K in F]: FieldSpec },
    /** Top-level keys that belong to a mapped field; never collected as numeric or info. */
    readonly claimed: ReadonlySet<string>,
    /** Loose forms (see looseKey) of the built-in spellings; such keys are claimed too. */
    readonly claimedLoose: ReadonlySet<string>,
    /** The owning normalizer's key caches. */
    readonly names: KeyNames,
    /** The resource, as the `resource` label of the values dropped. */
    readonly resource: string,
    /** The owning normalizer's count of values dropped. */
    readonly invalid: InvalidValues,
    /** snake_case names of objects whose fields join the record's own (see INLINE_OBJECTS). */
    readonly inline: ReadonlySet<string> = new Set(),
  ) {}
}

/** Field names of a resource. */
export type Fields<R extends Resource> = Extract<keyof (typeof SPELLINGS)[R], string>;

/** A new table of a resource under the field map's overrides for it. */
export function compileTable<R extends Resource>(
  resource: R,
  overrides: Record<string, string>,
  names: KeyNames,
  invalid: InvalidValues,
): FieldTable<Fields<R>> {
  const spellings: Record<string, readonly string[]> = SPELLINGS[resource];
  const taken = new Set<string>();
  for (const f in spellings) {
    const o = overrides[f];
    if (o) taken.add(o);
  }
  const fields: Record<string, FieldSpec> = {};
  const claimed = new Set<string>();
  const claimedLoose = new Set<string>();
  for (const f in spellings) {
    const o = overrides[f];
    // An override replaces the spellings; a key another field was mapped to is no longer guessed.
    const keys = o ? [o] : (spellings[f] ?? []).filter((k) => !taken.has(k));
    const cands: Candidate[] = [];
    for (const k of keys) {
      cands.push(k);
      claimed.add(k);
      if (o && k.includes(".")) cands.push(k.split("."));
    }
    let loose: Map<string, number> | undefined;
    if (!o) {
      loose = new Map();
      for (const [rank, k] of keys.entries()) {
        const l = looseKey(k);
        if (!loose.has(l) && !takenLoose(l, overrides)) loose.set(l, rank);
        claimedLoose.add(l);
      }
    }
    fields[f] = new FieldSpec(f, cands, loose);
  }
  return new FieldTable(
    fields as { [K in Fields<R>]: FieldSpec },
    claimed,
    claimedLoose,
    names,
    resource,
    invalid,
    new Set(INLINE_OBJECTS[resource]),
  );
}

/** A table without fields: every key is collected (the cluster overview). */
export function openTable(
  names: KeyNames,
  resource: string,
  invalid: InvalidValues,
): FieldTable<never> {
  return new FieldTable({}, new Set(), new Set(), names, resource, invalid);
}

function takenLoose(l: string, overrides: Record<string, string>): boolean {
  for (const f in overrides) if (looseKey(overrides[f] as string) === l) return true;
  return false;
}

/** The first present, non-null value among the candidates (no memo: for one-off reads). */
export function firstPresent(obj: Json, cands: readonly Candidate[]): unknown {
  for (const c of cands) {
    const v = typeof c === "string" ? obj[c] : walk(obj, c);
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

/** The spelling a read used, for error paths (only called when something failed). */
export function keyOf(obj: Json, cands: readonly Candidate[]): string {
  for (const c of cands) {
    const v = typeof c === "string" ? obj[c] : walk(obj, c);
    if (v !== undefined && v !== null) return typeof c === "string" ? c : c.join(".");
  }
  const first = cands[0];
  return first === undefined ? "?" : typeof first === "string" ? first : first.join(".");
}

function walk(obj: Json, path: readonly string[]): unknown {
  let v: unknown = obj;
  for (const k of path) {
    if (!isRecord(v)) return undefined;
    v = v[k];
  }
  return v;
}
