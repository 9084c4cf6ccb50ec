// The storage collector's families: snapshots and volumes listed, snapshots first seen (a
// counter), snapshots by age, by name, never used and of unknown age, the detail reads, and the
// opt-in per-snapshot series. Exported by shard 0 only.
import { counter, family, gauge, setting } from "../../exposition/descriptor.js";
import { type Family, labels } from "../../exposition/text.js";
import type { FamiliesContext, FamilyUpdater, FamilyView } from "../collector.js";
import { AGE_BANDS } from "./snapshot-facts.js";
import type { StorageInventory } from "./storage.js";
import { MAX_KNOWN_SNAPSHOTS } from "./storage-lists.js";

const SNAPSHOTS = "GET /snapshots";
const VOLUMES = "GET /volumes";
const DETAILS = "GET /templates/{id}";
const AGE_FROM = `age from the created time ${DETAILS} gives, else from when the exporter first listed the snapshot`;

const ON = { on: setting("poll.storage"), flavor: "e2b" } as const;

export const STORAGE_SNAPSHOTS = gauge(
  "storage_snapshots",
  `Snapshots of the team: they outlive the sandboxes they were taken of. Cached from the last successful poll of ${SNAPSHOTS}.`,
  [],
  ON,
);
export const STORAGE_VOLUMES = gauge(
  "storage_volumes",
  `Volumes of the team. Cached from the last successful poll of ${VOLUMES}.`,
  [],
  ON,
);
export const SNAPSHOTS_FIRST_SEEN = counter(
  "storage_snapshots_first_seen_total",
  `Snapshots first listed by ${SNAPSHOTS} since the exporter started: an id the read before did not list (the ids of the newest ${MAX_KNOWN_SNAPSHOTS.toLocaleString("en-US")} are remembered; those of the first read are not counted).`,
  [],
  ON,
);
export const SNAPSHOTS_BY_AGE = gauge(
  "storage_snapshots_by_age",
  `Snapshots by age band (${AGE_FROM}).`,
  ["age"],
  ON,
);
export const SNAPSHOT_OLDEST_AGE = gauge(
  "storage_snapshot_oldest_age_seconds",
  `Age of the oldest snapshot listed, seconds (${AGE_FROM}).`,
  [],
  ON,
);
export const SNAPSHOTS_NEVER_USED = gauge(
  "storage_snapshots_never_used",
  `Snapshots no sandbox was ever started from, as ${DETAILS} says (lastSpawnedAt null).`,
  [],
  ON,
);
export const SNAPSHOTS_AGE_UNKNOWN = gauge(
  "storage_snapshots_age_unknown",
  `Snapshots whose created time ${DETAILS} did not give (not read yet, or a named snapshot, which E2B serves by raw id only): their age counts from first seen.`,
  [],
  ON,
);
export const SNAPSHOTS_BY_NAME = gauge(
  "storage_snapshots_by_name",
  "Snapshots by name (without its tag); the names past poll.storageMaxNames sum up as _other.",
  ["name"],
  ON,
);
export const SNAPSHOT_DETAIL_READS = counter(
  "storage_snapshot_detail_reads_total",
  `Snapshot detail reads (${DETAILS}) by result: ok, not_found (no details served), failed.`,
  ["result"],
  ON,
);
export const SNAPSHOT_INFO = gauge(
  "snapshot_info",
  "One series per snapshot (opt-in: poll.storagePerSnapshotMetrics): its id and first name.",
  ["snapshot_id", "name"],
  ON,
);
export const SNAPSHOT_CREATED = gauge(
  "snapshot_created_timestamp_seconds",
  `When the snapshot was made, as ${DETAILS} says (opt-in).`,
  ["snapshot_id"],
  ON,
);
export const SNAPSHOT_LAST_SPAWNED = gauge(
  "snapshot_last_spawned_timestamp_seconds",
  `When a sandbox was last started from the snapshot, as ${DETAILS} says (opt-in).`,
  ["snapshot_id"],
  ON,
);
/** Its families; the per-snapshot ones have series with poll.storagePerSnapshotMetrics. */
export const STORAGE_FAMILIES = [
  STORAGE_SNAPSHOTS,
  STORAGE_VOLUMES,
  SNAPSHOTS_FIRST_SEEN,
  SNAPSHOTS_BY_AGE,
  SNAPSHOT_OLDEST_AGE,
  SNAPSHOTS_NEVER_USED,
  SNAPSHOTS_AGE_UNKNOWN,
  SNAPSHOTS_BY_NAME,
  SNAPSHOT_DETAIL_READS,
  SNAPSHOT_INFO,
  SNAPSHOT_CREATED,
  SNAPSHOT_LAST_SPAWNED,
] as const;

/** Makes the storage families; the updater renders each reading. */
export function storageFamilies({ ns }: FamiliesContext): FamilyUpdater<StorageInventory> {
  return (s, view) => {
    const snapshots = family(ns, STORAGE_SNAPSHOTS);
    const volumes = family(ns, STORAGE_VOLUMES);
    const firstSeen = family(ns, SNAPSHOTS_FIRST_SEEN);
    if (s.snapshots) snapshots.add("", s.snapshots.count);
    if (s.facts !== undefined) firstSeen.add("", s.firstSeen);
    if (s.volumes) volumes.add("", s.volumes.count);
    return [snapshots, volumes, firstSeen, ...snapshotFamilies(ns, s), ...perSnapshot(ns, s, view)];
  };
}

/** The families of the snapshots' facts (of the newest MAX_KNOWN_SNAPSHOTS). */
function snapshotFamilies(ns: string, s: StorageInventory): Family[] {
  const byAge = family(ns, SNAPSHOTS_BY_AGE);
  const oldest = family(ns, SNAPSHOT_OLDEST_AGE);
  const neverUsed = family(ns, SNAPSHOTS_NEVER_USED);
  const unknown = family(ns, SNAPSHOTS_AGE_UNKNOWN);
  const byName = family(ns, SNAPSHOTS_BY_NAME);
  const reads = family(ns, SNAPSHOT_DETAIL_READS);
  const sum = s.summary;
  if (sum) {
    AGE_BANDS.forEach((b, i) => {
      byAge.add(labels([["age", b.label]]), sum.byAge[i] as number);
    });
    if (sum.oldestAgeSeconds !== undefined) oldest.add("", sum.oldestAgeSeconds);
    neverUsed.add("", sum.neverUsed);
    unknown.add("", sum.ageUnknown);
    for (const [name, n] of sum.byName) byName.add(labels([["name", name]]), n);
  }
  if (s.facts !== undefined)
    for (const [result, n] of Object.entries(s.detailReads))
      reads.add(labels([["result", result]]), n);
  return [byAge, oldest, neverUsed, unknown, byName, reads];
}

/** Per-snapshot series of the newest poll.storageMaxSnapshotSeries snapshots, when opted in. */
function perSnapshot(ns: string, s: StorageInventory, view: FamilyView): Family[] {
  const info = family(ns, SNAPSHOT_INFO);
  const created = family(ns, SNAPSHOT_CREATED);
  const spawned = family(ns, SNAPSHOT_LAST_SPAWNED);
  if (s.facts === undefined || s.perSnapshotSeries <= 0) return [info, created, spawned];
  let n = 0;
  for (const f of s.facts.values()) {
    if (n++ >= s.perSnapshotSeries) break;
    const id = labels([["snapshot_id", f.id]], view.guard);
    info.add(
      labels(
        [
          ["snapshot_id", f.id],
          ["name", f.names[0] ?? ""],
        ],
        view.guard,
      ),
      1,
    );
    if (f.createdAt !== undefined) created.add(id, f.createdAt / 1000);
    if (typeof f.lastSpawnedAt === "number") spawned.add(id, f.lastSpawnedAt / 1000);
  }
  return [info, created, spawned];
}
