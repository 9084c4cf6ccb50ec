// The exec step: runs the module's command (`{nonce}` filled in) through the agent's
// process.Process/Start and checks its exit and output, timing the envelope stream.

import { defineStep } from "../../step.js";
import { execPhase } from "./exec.js";

export const execStep = defineStep({
  name: "exec",
  description: "runs the command through the agent and checks its exit code and output",
  phases: ["exec"],
  reasons: ["missing_end", "exit_code", "wrong_output"],
  run: (ctx) => ctx.phases([["exec", execPhase]]),
});
