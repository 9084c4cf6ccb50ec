// The template-builds collector's settings (under `poll:`).
import { bool, int } from "../../config/fields.js";
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
