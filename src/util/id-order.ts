// Sorting row numbers by id fast: a counting pass over the leading characters, then each small
// bucket on its own (ids are random strings of one alphabet, so buckets hold two or three rows).

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
    // No more buckets than a few per row: a team of 100 sandboxes sorted in 65,536 buckets spent
    // its time clearing them (0.44 ms a sort, 0.4-0.8 s a cycle of 1,000 teams).
    if (ranks.length > 0 && buckets * size > Math.min(MAX_BUCKETS, Math.max(DIGITS, 4 * n))) break;
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
