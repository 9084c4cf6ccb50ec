// The time to live of sandboxes, as E2B enforces it: when a running sandbox's end passes, it is
// paused (created with auto-pause: files and processes kept) or killed with reason "timeout".
// Applied lazily, at the start of each management and data-plane request, when switched on.
import type { SimContext } from "./context.js";
import type { SimSandbox } from "./model.js";

/** Pauses or kills every running sandbox whose end passed; a no-op unless `expireSandboxes` is on. */
export function expireSandboxes(ctx: SimContext): void {
  const knobs = ctx.faults.lifecycle;
  if (!knobs.expireSandboxes) return;
  const now = ctx.clock.now();
  const due: SimSandbox[] = [];
  for (const s of ctx.state.sandboxes.values())
    if (s.state === "running" && s.endAt <= now) due.push(s);
  for (const s of due) {
    if (s.autoPause && !knobs.autoPauseKillsInstead) autoPause(ctx, s);
    else ctx.state.removeSandbox(s.sandboxID, "timeout");
  }
}

/** Pauses a sandbox at its timeout; a knob may lose the files written shortly before it. */
function autoPause(ctx: SimContext, s: SimSandbox): void {
  const withinMs = ctx.faults.lifecycle.autoPauseLosesFilesWrittenWithinMs;
  if (withinMs !== undefined) {
    for (const [path, at] of s.fileWrittenAt)
      if (at >= s.endAt - withinMs) {
        s.files.delete(path);
        s.fileWrittenAt.delete(path);
      }
  }
  s.shownState = undefined;
  s.state = "paused";
  s.firstPauseFiles ??= new Map(s.files);
  ctx.state.lifecycle("paused", s);
}
