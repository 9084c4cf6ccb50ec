// The storage collector's settings (under `poll:`).
import { bool } from "../../config/fields.js";
import type { SectionOf } from "../../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../../config/slice.js";

const X = ENV_PREFIX;

export const storageSlice = defineSlice({
  key: "poll",
  fields: {
    /** Read the team's storage every tick: snapshots and volumes (E2B's GET /snapshots, /volumes). */
    storage: bool.default(false),
  },
  settings: [
    {
      path: "poll.storage",
      env: `${X}POLL_STORAGE`,
      flag: "poll-storage",
      kind: "bool",
      help: "storage inventory: snapshots and volumes (E2B's GET /snapshots and /volumes), and snapshots first seen",
      doc: "storage inventory (shard 0): `GET /snapshots` (paged) and `GET /volumes` every tick; snapshots and volumes listed, and snapshots first seen",
    },
  ],
});

declare module "../poll-settings.js" {
  interface PollSettings extends SectionOf<typeof storageSlice> {}
}
