// Stable sharding of sandboxes by id (FNV-1a 32-bit over UTF-8), as kube-state-metrics shards objects.

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a 32-bit hash of the UTF-8 bytes of `s`, encoded on the fly (no Buffer per id). */
export function fnv1a32(s: string): number {
  let h = FNV_OFFSET;
  const mix = (byte: number): void => {
    h = Math.imul(h ^ byte, FNV_PRIME);
  };
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      h = Math.imul(h ^ c, FNV_PRIME);
      continue;
    }
    if (c < 0x800) {
      mix(0xc0 | (c >> 6));
      mix(0x80 | (c & 0x3f));
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const low = s.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
        i++;
        mix(0xf0 | (c >> 18));
        mix(0x80 | ((c >> 12) & 0x3f));
        mix(0x80 | ((c >> 6) & 0x3f));
        mix(0x80 | (c & 0x3f));
        continue;
      }
    }
    // A lone surrogate becomes U+FFFD, as Buffer.from(s, "utf8") encodes it.
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    mix(0xe0 | (c >> 12));
    mix(0x80 | ((c >> 6) & 0x3f));
    mix(0x80 | (c & 0x3f));
  }
  return h >>> 0;
}

/** The shard (0..total-1) a sandbox id belongs to; the same on every replica and every run. */
export function shardOf(id: string, total: number): number {
  if (total <= 1) return 0;
  return fnv1a32(id) % total;
}

/** True when `id` belongs to shard `index` of `total`. */
export function inShard(id: string, index: number, total: number): boolean {
  return shardOf(id, total) === index;
}
