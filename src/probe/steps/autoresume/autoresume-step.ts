// The autoresume step: create asks for auto-resume (E2B's `autoResume: {enabled: true}`); the
// sandbox is paused (by the API, or by the platform with the autopause step), woken by a request
// to its service's port alone, and checked.

import { defineStep } from "../../step.js";
import { autoPauseTimeoutS } from "../autopause/autopause.js";
import { askingForTraffic } from "../http/http.js";
import {
  autoResumeCheckPhase,
  autoResumePausePhase,
  autoResumeWakePhase,
  prepareAutoResume,
} from "./autoresume.js";

export const autoResumeStep = defineStep({
  name: "autoresume",
  description:
    "pauses the sandbox, wakes it by a request to its service's port alone and checks the service, its file and process",
  phases: ["autoresume_pause", "autoresume_wake", "autoresume_check"],
  reasons: [
    "not_paused",
    "not_auto_paused",
    "not_auto_resumed",
    "wake_timeout",
    "not_found",
    "port_closed",
    "bad_status",
    "body_mismatch",
    "body_too_large",
    "file_lost",
    "process_lost",
    "wrong_output",
    "exit_code",
    "missing_end",
  ],
  needs: {
    capability: {
      name: "autoResume",
      ask: (control, run) =>
        askingForTraffic(
          control,
          { autoResume: true, allowPublicTraffic: run.settings.http?.allowPublicTraffic !== false },
          (c) => {
            run.autoResumeAsked = c.autoResume;
            if (c.trafficToken !== undefined) run.trafficToken = c.trafficToken;
          },
        ),
      granted: (run) => run.autoResumeAsked === true,
    },
  },
  // With the autopause step, the pause is the platform's: the wait outlasts the sandbox timeout.
  limits: {
    autoresume_pause: (run, ms): number =>
      run.settings.steps.includes("autopause") ? ms + autoPauseTimeoutS(run) * 1000 : ms,
  },
  async run(ctx) {
    const setup = await ctx.setup("autoresume_pause", prepareAutoResume, "before the pause");
    if (setup) return setup;
    return ctx.phases([
      ["autoresume_pause", autoResumePausePhase],
      ["autoresume_wake", autoResumeWakePhase],
      ["autoresume_check", autoResumeCheckPhase],
    ]);
  },
});
