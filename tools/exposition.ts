// Reading an exposition back: shared by the tests and the benchmark.

/** Exposition text to `name{labels}` -> value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/**
 * The value of the first series of `name` carrying every label of `labels` (others allowed), from
 * a `samples()` map; undefined when there is none.
 */
export function sampleOf(
  m: ReadonlyMap<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const [key, value] of m) {
    if (key !== name && !key.startsWith(`${name}{`)) continue;
    if (want.every((w) => key.includes(w))) return value;
  }
  return undefined;
}
