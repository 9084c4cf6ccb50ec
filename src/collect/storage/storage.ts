// Storage inventory (poll.storage, off by default): the team's snapshots (E2B's paged GET
// /snapshots) and volumes (GET /volumes) every tick, and the snapshots first seen. Storage outlives
// the sandboxes the policy pauses or kills, and costs while it lasts. Cluster-wide (shard 0).
// A list the platform does not serve (404 or 405) is left out and asked again after
// poll.capabilityRecheckMs; when neither is served, the collector is unsupported.
import { routeMissing, type TickCollector, type TickContext } from "../collector.js";
import { storageFamilies } from "./storage-families.js";
import {
  MAX_KNOWN_SNAPSHOTS,
  readList,
  type StorageKind,
  type StoredRecord,
} from "./storage-lists.js";
import { storageSlice } from "./storage-settings.js";

/**
 * How many of one kind the platform listed. Not by template: E2B's SnapshotInfo (snapshotID,
 * names) and Volume (volumeID, name) name none.
 */
export interface StorageCount {
  count: number;
}

/** The collector's data: what the latest read found, carried from tick to tick. */
export interface StorageInventory {
  /** Absent: the platform does not serve the list (or it was never read). */
  snapshots?: StorageCount;
  volumes?: StorageCount;
  /** A list the platform does not serve: when it is asked again (epoch ms). */
  unserved: Partial<Record<StorageKind, number>>;
  /** Snapshot ids of the latest read of /snapshots; absent before the first. */
  known?: readonly string[];
  /** Snapshots first seen since start, those of the first read of /snapshots aside. */
  firstSeen: number;
}

declare module "../snapshot.js" {
  interface TickData {
    storage: StorageInventory;
  }
}

export const storageCollector: TickCollector<"storage", typeof storageSlice> = {
  name: "storage",
  optional: true,
  optIn: "storage",
  settings: storageSlice,
  runs: (where) => where.clusterWide && where.optIn.has("storage"),
  read: (ctx, previous) => readStorage(ctx, previous),
  families: storageFamilies,
};

/** One reading of both lists. */
async function readStorage({ reader, clock, poll }: TickContext, previous?: StorageInventory) {
  const now = clock.now();
  const before = previous ?? { unserved: {}, firstSeen: 0 };
  const kinds = (["snapshots", "volumes"] as const).filter(
    (k) => !(now < (before.unserved[k] ?? Number.NEGATIVE_INFINITY)),
  );
  const reads = await Promise.allSettled(kinds.map((k) => readList(reader, k, poll.maxPages)));
  const value: StorageInventory = { unserved: {}, firstSeen: before.firstSeen };
  let requests = 0;
  let unserved: unknown;
  for (const kind of ["snapshots", "volumes"] as const) {
    const i = kinds.indexOf(kind);
    const got = reads[i];
    if (got === undefined) {
      // Not asked this tick: still not served.
      value.unserved[kind] = before.unserved[kind] as number;
      continue;
    }
    if (got.status === "rejected") {
      if (!routeMissing(got.reason)) throw got.reason;
      unserved ??= got.reason;
      requests++;
      value.unserved[kind] = now + poll.capabilityRecheckMs;
      continue;
    }
    requests += got.value.requests;
    value[kind] = { count: got.value.value.length };
    if (kind === "snapshots") {
      const { known, fresh } = firstSeen(got.value.value, before.known);
      value.known = known;
      value.firstSeen += fresh;
    }
  }
  // Neither list served (this tick or before): the platform has no storage to show.
  if (value.snapshots === undefined && value.volumes === undefined && unserved !== undefined)
    throw unserved;
  if (value.known === undefined && before.known !== undefined) value.known = before.known;
  return { value, requests };
}

/** The ids to remember, and how many of them the read before did not list (none at the first). */
function firstSeen(
  records: readonly StoredRecord[],
  before: readonly string[] | undefined,
): { known: string[]; fresh: number } {
  const known = [...new Set(records.map((r) => r.id))].slice(0, MAX_KNOWN_SNAPSHOTS);
  if (before === undefined) return { known, fresh: 0 };
  const had = new Set(before);
  return { known, fresh: known.filter((id) => !had.has(id)).length };
}
