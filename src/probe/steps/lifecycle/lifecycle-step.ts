// The lifecycle step: starts a background process, then `lifecycleRounds` rounds of pause, resume
// and state_check (the file, a new command and the process survived). The second resume is where
// platforms fail.

import { defineStep } from "../../step.js";
import { prepareLifecycle } from "./lifecycle.js";
import { pausePhase } from "./pause.js";
import { resumePhase } from "./resume.js";
import { stateCheckPhase } from "./state-check.js";

export const lifecycleStep = defineStep({
  name: "lifecycle",
  description:
    "pauses and resumes the sandbox lifecycleRounds times, checking its file and background process each time",
  phases: ["pause", "resume", "state_check"],
  reasons: [
    "not_paused",
    "not_resumed",
    "not_found",
    "file_lost",
    "process_lost",
    "wrong_output",
    "exit_code",
    "missing_end",
  ],
  needs: { steps: { names: ["file"], why: "checks the file" } },
  async run(ctx) {
    // Starting the background process is no platform operation worth a duration: its failure is
    // the pause phase's, its time counts only in the total.
    const setup = await ctx.setup("pause", prepareLifecycle, "before the first pause");
    if (setup) return setup;
    for (let round = 0; round < Math.max(1, ctx.run.settings.lifecycleRounds); round++) {
      const failed = await ctx.phases(
        [
          ["pause", pausePhase],
          ["resume", resumePhase],
          ["state_check", stateCheckPhase],
        ],
        ctx.round(),
      );
      if (failed) return failed;
    }
    return undefined;
  },
});
