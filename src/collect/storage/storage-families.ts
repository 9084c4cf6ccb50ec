// The storage collector's families: snapshots and volumes listed, snapshots first seen (a
// counter), snapshots by age, by name, never used and of unknown age, the detail reads, and the
// opt-in per-snapshot series. Exported by shard 0 only.
import { Family, labels } from "../../metrics/exposition/text.js";
import type { FamiliesContext, FamilyUpdater, FamilyView } from "../collector.js";
import { AGE_BANDS } from "./snapshot-facts.js";
import type { StorageInventory } from "./storage.js";
import { MAX_KNOWN_SNAPSHOTS } from "./storage-lists.js";

const SNAPSHOTS = "GET /snapshots";
const VOLUMES = "GET /volumes";
const DETAILS = "GET /templates/{id}";
const AGE_FROM = `age from the created time ${DETAILS} gives, else from when the exporter first listed the snapshot`;

/** Makes the storage families; the updater renders each reading. */
export function storageFamilies({ ns }: FamiliesContext): FamilyUpdater<StorageInventory> {
  return (s, view) => {
    const snapshots = new Family(
      `${ns}_storage_snapshots`,
      "gauge",
      `Snapshots of the team: they outlive the sandboxes they were taken of. Cached from the last successful poll of ${SNAPSHOTS}.`,
    );
    const volumes = new Family(
      `${ns}_storage_volumes`,
      "gauge",
      `Volumes of the team. Cached from the last successful poll of ${VOLUMES}.`,
    );
    const firstSeen = new Family(
      `${ns}_storage_snapshots_first_seen`,
      "counter",
      `Snapshots first listed by ${SNAPSHOTS} since the exporter started: an id the read before did not list (the ids of the newest ${MAX_KNOWN_SNAPSHOTS.toLocaleString("en-US")} are remembered; those of the first read are not counted).`,
    );
    if (s.snapshots) snapshots.add("", s.snapshots.count);
    if (s.facts !== undefined) firstSeen.add("", s.firstSeen);
    if (s.volumes) volumes.add("", s.volumes.count);
    return [snapshots, volumes, firstSeen, ...snapshotFamilies(ns, s), ...perSnapshot(ns, s, view)];
  };
}

/** The families of the snapshots' facts (of the newest MAX_KNOWN_SNAPSHOTS). */
function snapshotFamilies(ns: string, s: StorageInventory): Family[] {
  const byAge = new Family(
    `${ns}_storage_snapshots_by_age`,
    "gauge",
    `Snapshots by age band (${AGE_FROM}).`,
  );
  const oldest = new Family(
    `${ns}_storage_snapshot_oldest_age_seconds`,
    "gauge",
    `Age of the oldest snapshot listed, seconds (${AGE_FROM}).`,
  );
  const neverUsed = new Family(
    `${ns}_storage_snapshots_never_used`,
    "gauge",
    `Snapshots no sandbox was ever started from, as ${DETAILS} says (lastSpawnedAt null).`,
  );
  const unknown = new Family(
    `${ns}_storage_snapshots_age_unknown`,
    "gauge",
    `Snapshots whose created time ${DETAILS} did not give (not read yet, or a named snapshot, which E2B serves by raw id only): their age counts from first seen.`,
  );
  const byName = new Family(
    `${ns}_storage_snapshots_by_name`,
    "gauge",
    "Snapshots by name (without its tag); the names past poll.storageMaxNames sum up as _other.",
  );
  const reads = new Family(
    `${ns}_storage_snapshot_detail_reads`,
    "counter",
    `Snapshot detail reads (${DETAILS}) by result: ok, not_found (no details served), failed.`,
  );
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
  const info = new Family(
    `${ns}_snapshot_info`,
    "gauge",
    "One series per snapshot (opt-in: poll.storagePerSnapshotMetrics): its id and first name.",
  );
  const created = new Family(
    `${ns}_snapshot_created_timestamp_seconds`,
    "gauge",
    `When the snapshot was made, as ${DETAILS} says (opt-in).`,
  );
  const spawned = new Family(
    `${ns}_snapshot_last_spawned_timestamp_seconds`,
    "gauge",
    `When a sandbox was last started from the snapshot, as ${DETAILS} says (opt-in).`,
  );
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
