// The autopause step: create asks for auto-pause with a short sandbox timeout (E2B's autoPause);
// each of `lifecycleRounds` rounds waits for the platform to pause the sandbox by itself, resumes
// it and checks its file and process. Never pauses it, never moves its timeout meanwhile.

import { defineStep } from "../../step.js";
import { stateCheckPhase } from "../lifecycle/state-check.js";
import {
  askingAutoPause,
  autoPauseResumeAgain,
  autoPauseResumeLast,
  autoPauseTimeoutS,
  autoPauseWaitPhase,
  prepareAutoPause,
} from "./autopause.js";

export const autoPauseStep = defineStep({
  name: "autopause",
  description:
    "waits for the platform to pause the sandbox at its timeout, resumes it and checks its file and process, lifecycleRounds times",
  phases: ["autopause_wait", "autopause_resume", "autopause_check"],
  reasons: [
    "not_auto_paused",
    "not_resumed",
    "not_found",
    "file_lost",
    "process_lost",
    "wrong_output",
    "exit_code",
    "missing_end",
  ],
  needs: {
    steps: { names: ["file"], why: "checks the file" },
    capability: {
      name: "autoPause",
      ask: (control, run) =>
        askingAutoPause(control, autoPauseTimeoutS(run), run.monotonic, (yes, sentAt) => {
          run.autoPauseAsked = yes;
          run.autoPauseTimerFrom = sentAt;
        }),
      granted: (run) => run.autoPauseAsked === true,
    },
  },
  // The wait outlasts the sandbox timeout by one phase limit (the grace).
  limits: { autopause_wait: (run, ms) => ms + autoPauseTimeoutS(run) * 1000 },
  check(m) {
    if (m.timeoutMs > m.lifecycleRounds * m.autoPauseTimeoutMs) return [];
    return [
      {
        field: "timeoutMs",
        message: `a timeout above lifecycleRounds x autoPauseTimeoutMs (${m.lifecycleRounds} x ${m.autoPauseTimeoutMs} ms): each autopause round waits out the sandbox timeout`,
        input: m.timeoutMs,
      },
    ];
  },
  async run(ctx) {
    const setup = await ctx.setup("autopause_wait", prepareAutoPause, "before the first wait");
    if (setup) return setup;
    const { settings } = ctx.run;
    const last = Math.max(1, settings.lifecycleRounds) - 1;
    // With the autoresume step, the last resume keeps the short timeout: its pause is the next.
    const keepShort = settings.steps.includes("autoresume");
    for (let round = 0; round <= last; round++) {
      const resume = round === last && !keepShort ? autoPauseResumeLast : autoPauseResumeAgain;
      const failed = await ctx.phases(
        [
          ["autopause_wait", autoPauseWaitPhase],
          ["autopause_resume", resume],
          ["autopause_check", stateCheckPhase],
        ],
        ctx.round(),
      );
      if (failed) return failed;
    }
    return undefined;
  },
});
