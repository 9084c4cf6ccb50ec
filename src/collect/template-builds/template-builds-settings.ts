// The template-builds collector's settings (under `poll:`).
import { bool, int } from "../../config/fields.js";
import type { SectionOf } from "../../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../../config/slice.js";

const X = ENV_PREFIX;

export const templateBuildsSlice = defineSlice({
  key: "poll",
  fields: {
    /** Read template build health: the list every tick, and why each failed build failed (once). */
    templateBuilds: bool.default(false),
    /** Status reads of failed builds per tick at most; the rest are read on later ticks, oldest first. */
    templateBuildsMaxReads: int(1, 10_000).default(20),
  },
  settings: [
    {
      path: "poll.templateBuilds",
      env: `${X}POLL_TEMPLATE_BUILDS`,
      flag: "poll-template-builds",
      kind: "bool",
      help: "template build health: why a template's latest build failed",
      doc: "template build health (shard 0): `GET /templates` every tick, and `GET /templates/{id}/builds/{buildID}/status` once per failed build for its step and reason, at most `poll.templateBuildsMaxReads` a tick, longest waiting first; a failed read backs off per build (1, 2, 4 … 32 ticks). The build id is the template's `buildID` (read as its version; a platform that also sends `version` needs `fieldMap.template.version: buildID`)",
    },
    {
      path: "poll.templateBuildsMaxReads",
      env: `${X}POLL_TEMPLATE_BUILDS_MAX_READS`,
      flag: "poll-template-builds-max-reads",
      kind: "int",
      help: "build-status reads of failed builds per tick at most; the others wait for later ticks, longest waiting first",
    },
  ],
});

declare module "../poll-settings.js" {
  interface PollSettings extends SectionOf<typeof templateBuildsSlice> {}
}
