// Equal metadata maps shared across sandboxes: a fleet has few distinct combinations, and 100,000
// copies held per snapshot cost tens of MB. Found by a hash of the content, not by a key string:
// building a key of every pair for every record cost 80 ms a cycle at 100,000 sandboxes, most of
// it in strings made only to be looked up once.

/** A frozen map and its keys in record order (what an equal map must repeat). */
interface Shared {
  map: Readonly<Record<string, string>>;
  keys: readonly string[];
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 16777619;

/** One frozen map per distinct content (pairs in record order); cleared past `limit` maps. */
export class MetadataShare {
  private readonly buckets = new Map<number, Shared[]>();
  private count = 0;

  constructor(private readonly limit: number) {}

  /** How many distinct maps are held. */
  get size(): number {
    return this.count;
  }

  /** The shared map equal to `m` (same pairs, same order), else `m` frozen and remembered. */
  share(m: Record<string, string>): Record<string, string> {
    let h = FNV_OFFSET;
    for (const k in m) h = mix(mix(h, k), m[k] as string);
    // A small integer key: V8 keeps it unboxed in the map.
    const key = h & 0x3fffffff;
    const bucket = this.buckets.get(key);
    if (bucket !== undefined) for (const s of bucket) if (same(s, m)) return s.map;
    if (this.count >= this.limit) {
      this.buckets.clear();
      this.count = 0;
    }
    const frozen = Object.freeze(m);
    const shared = { map: frozen, keys: Object.keys(m) };
    const fresh = this.buckets.get(key);
    if (fresh === undefined) this.buckets.set(key, [shared]);
    else fresh.push(shared);
    this.count++;
    return frozen;
  }
}

/** FNV-1a over the string's length and UTF-16 code units: "ab","c" and "a","bc" differ. */
function mix(h: number, s: string): number {
  let x = Math.imul(h ^ s.length, FNV_PRIME);
  for (let i = 0; i < s.length; i++) x = Math.imul(x ^ s.charCodeAt(i), FNV_PRIME);
  return x;
}

function same(s: Shared, m: Record<string, string>): boolean {
  let i = 0;
  for (const k in m) {
    if (s.keys[i] !== k || s.map[k] !== m[k]) return false;
    i++;
  }
  return i === s.keys.length;
}
