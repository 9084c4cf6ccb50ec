// The storage collector's settings (under `poll:`).
import { bool, int } from "../../config/fields.js";
import type { SectionOf } from "../../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../../config/slice.js";

const X = ENV_PREFIX;

export const storageSlice = defineSlice({
  key: "poll",
  fields: {
    /** Read the team's storage every tick: snapshots and volumes (E2B's GET /snapshots, /volumes). */
    storage: bool.default(false),
    /** Snapshot details (GET /templates/{id}: created, last spawned) read per tick; 0: none. */
    storageDetailsPerTick: int(0, 1_000).default(50),
    /** Names of sandbox_storage_snapshots_by_name; the rest sum up as `_other`. */
    storageMaxNames: int(1, 1_000).default(50),
    /** Per-snapshot series (created, last spawned, info), like the per-sandbox ones: opt-in. */
    storagePerSnapshotMetrics: bool.default(false),
    /** Cap of per-snapshot series: the newest this many snapshots. */
    storageMaxSnapshotSeries: int(0).default(10_000),
  },
  settings: [
    {
      path: "poll.storage",
      env: `${X}POLL_STORAGE`,
      flag: "poll-storage",
      kind: "bool",
      help: "storage inventory: snapshots and volumes (E2B's GET /snapshots and /volumes), and snapshots first seen",
      doc: "storage inventory (shard 0): `GET /snapshots` (paged) and `GET /volumes` every tick; snapshots and volumes listed, snapshots first seen, by age, by name and never used",
    },
    {
      path: "poll.storageDetailsPerTick",
      env: `${X}POLL_STORAGE_DETAILS_PER_TICK`,
      flag: "poll-storage-details-per-tick",
      kind: "int",
      help: "snapshot details (GET /templates/{id}) read per tick, newest unknown first",
      doc: "snapshots whose details (`GET /templates/{id}`: created, last spawned, spawn count) are read per tick, newest unknown first, each again after an hour; 0 reads none (ages then count from first seen)",
    },
    {
      path: "poll.storageMaxNames",
      env: `${X}POLL_STORAGE_MAX_NAMES`,
      flag: "poll-storage-max-names",
      kind: "int",
      help: "snapshot names with a series of their own (the rest: _other)",
    },
    {
      path: "poll.storagePerSnapshotMetrics",
      env: `${X}POLL_STORAGE_PER_SNAPSHOT_METRICS`,
      flag: "poll-storage-per-snapshot-metrics",
      kind: "bool",
      help: "export per-snapshot series (created, last spawned, info)",
    },
    {
      path: "poll.storageMaxSnapshotSeries",
      env: `${X}POLL_STORAGE_MAX_SNAPSHOT_SERIES`,
      flag: "poll-storage-max-snapshot-series",
      kind: "int",
      help: "cap of per-snapshot series (the newest snapshots)",
    },
  ],
});

declare module "../poll-settings.js" {
  interface PollSettings extends SectionOf<typeof storageSlice> {}
}
