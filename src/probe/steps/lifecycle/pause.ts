// Phase pause: POST /sandboxes/{id}/pause, then reads the sandbox until it says paused.
import { abortable } from "../../abortable.js";
import { type PhaseFn, probeSandbox } from "../../phase.js";
import { awaitState, notFoundAsLost } from "./lifecycle.js";

/** Pauses the probe sandbox; passes once a read reports it paused, within the phase's budget. */
export const pausePhase: PhaseFn = async (run, signal, budgetMs) => {
  const deadline = run.monotonic() + budgetMs;
  const { id } = probeSandbox(run);
  await notFoundAsLost(run, "pause", () => abortable(run.control.pauseSandbox(id), signal));
  await notFoundAsLost(run, "waiting for paused", () =>
    awaitState(run, "paused", "not_paused", signal, deadline),
  );
};
