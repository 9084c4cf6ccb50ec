// "Did you mean" for an unknown key at any depth of a config file: the known keys at that place
// (read from the schema the key was checked against), and the one closest to what was written.

/** Enough of a zod schema's definition to walk it (zod 4 keeps it in `_zod.def`). */
interface Def {
  type: string;
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
  shape?: Record<string, unknown>;
  element?: unknown;
  valueType?: unknown;
  options?: readonly unknown[];
  left?: unknown;
  right?: unknown;
}

/** Deepest nesting followed through wrappers; zod schemas are trees, this only guards a cycle. */
const MAX_WRAPPERS = 64;

const defOf = (schema: unknown): Def | undefined =>
  (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;

/** The object schemas a value at `keys` below `schema` is checked against (several for a union). */
function objectsAt(schema: unknown, keys: readonly string[]): Def[] {
  let level: unknown[] = [schema];
  for (const key of keys) level = level.flatMap((s) => objects(s)).flatMap((d) => child(d, key));
  return level.flatMap((s) => objects(s)).filter((d) => d.type === "object");
}

/** The object, array and record definitions `schema` stands for once its wrappers are peeled. */
function objects(schema: unknown, depth = 0): Def[] {
  const def = defOf(schema);
  if (!def || depth > MAX_WRAPPERS) return [];
  switch (def.type) {
    case "object":
    case "array":
    case "record":
      return [def];
    case "default":
    case "prefault":
    case "optional":
    case "nullable":
    case "readonly":
    case "catch":
      return objects(def.innerType, depth + 1);
    case "pipe":
      // A transform's input is what the file is checked against; a preprocess (a transform in
      // front) checks the file against what follows it.
      return defOf(def.in)?.type === "transform"
        ? objects(def.out, depth + 1)
        : objects(def.in, depth + 1);
    case "union":
      return (def.options ?? []).flatMap((o) => objects(o, depth + 1));
    case "intersection":
      return [...objects(def.left, depth + 1), ...objects(def.right, depth + 1)];
    default:
      return [];
  }
}

function child(def: Def, key: string): unknown[] {
  if (def.type === "object")
    return def.shape && Object.hasOwn(def.shape, key) ? [def.shape[key]] : [];
  if (def.type === "array") return /^\d+$/.test(key) ? [def.element] : [];
  if (def.type === "record") return [def.valueType];
  return [];
}

/** The keys a mapping at `parents` below `schema` may hold, in the schema's order. */
export function knownKeys(schema: unknown, parents: readonly string[]): string[] {
  const names = objectsAt(schema, parents).flatMap((d) => Object.keys(d.shape ?? {}));
  return [...new Set(names)];
}

/** Case, `-` and `_` do not tell keys apart. */
const squash = (k: string): string => k.toLowerCase().replace(/[-_]/g, "");

/** Edits (insert, delete, replace, swap of neighbours) from a to b: optimal string alignment. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const prev = rows[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}

/** Edits a key of this length may be off by and still be taken for a typo. */
function tolerance(length: number): number {
  return length <= 3 ? 0 : length < 8 ? 1 : 2;
}

/**
 * The candidate `key` most likely meant: fewest edits once case, `-` and `_` are ignored, within
 * the key's tolerance; a missing `Ms` suffix is free (durations are stored in ms).
 */
export function closest(key: string, candidates: readonly string[]): string | undefined {
  const k = squash(key);
  let best: { name: string; d: number } | undefined;
  for (const name of candidates) {
    const c = squash(name);
    const d = Math.min(
      editDistance(k, c),
      c.endsWith("ms") ? editDistance(k, c.slice(0, -2)) : Infinity,
    );
    if (d <= tolerance(k.length) && (best === undefined || d < best.d)) best = { name, d };
  }
  return best?.name;
}
