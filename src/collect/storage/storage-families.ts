// The storage collector's families: snapshots and volumes listed, and snapshots first seen (a
// counter). Exported by shard 0 only.
import { Family } from "../../metrics/exposition/text.js";
import type { FamiliesContext, FamilyUpdater } from "../collector.js";
import type { StorageInventory } from "./storage.js";
import { MAX_KNOWN_SNAPSHOTS } from "./storage-lists.js";

const SNAPSHOTS = "GET /snapshots";
const VOLUMES = "GET /volumes";

/** Makes the storage families; the updater renders each reading. */
export function storageFamilies({ ns }: FamiliesContext): FamilyUpdater<StorageInventory> {
  return (s) => {
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
    if (s.snapshots) {
      snapshots.add("", s.snapshots.count);
    }
    if (s.known !== undefined) firstSeen.add("", s.firstSeen);
    if (s.volumes) volumes.add("", s.volumes.count);
    return [snapshots, volumes, firstSeen];
  };
}
