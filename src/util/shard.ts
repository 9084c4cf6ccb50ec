// Stable sharding of sandboxes by id (FNV-1a 32-bit), as kube-state-metrics shards objects.

/** The shard (0..total-1) a sandbox id belongs to; the same on every replica and every run. */
export function shardOf(id: string, total: number): number {
  if (total <= 1) return 0;
  let h = 0x811c9dc5;
  const bytes = Buffer.from(id, "utf8");
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i] as number;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % total;
}

/** True when `id` belongs to shard `index` of `total`. */
export function inShard(id: string, index: number, total: number): boolean {
  return shardOf(id, total) === index;
}
