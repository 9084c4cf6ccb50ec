// When each paused sandbox was paused (pausedFor rules, sandbox_policy_paused_sandboxes): from its
// paused lifecycle event where events arrive (poll.events or the webhook), else from the first walk
// that saw it paused. It never guesses older: after a restart without events the clock starts again
// at the first walk, and a walk's time is when it ended, not when it began.
import type { LifecycleEvent } from "../platform/events.js";
import type { Sandbox } from "../platform/types.js";

/** Bands of the paused-sandboxes gauge: upper bounds in ms (the last band is open). */
export const PAUSE_BANDS = [
  { label: "lt_1h", below: 3_600_000 },
  { label: "1h_to_1d", below: 86_400_000 },
  { label: "1d_to_7d", below: 7 * 86_400_000 },
  { label: "ge_7d", below: Number.POSITIVE_INFINITY },
] as const;

interface Pause {
  at: number;
  /** From a paused event (its own time), or from a walk (when the walk saw it). */
  from: "event" | "walk";
}

/** Paused sandboxes and since when; owned by one policy engine. */
export class PauseClock {
  private readonly since = new Map<string, Pause>();

  constructor(private readonly paused: ReadonlySet<string>) {}

  /** A lifecycle event: a pause starts the clock at its time, a resume or kill after it stops it. */
  onEvent(e: LifecycleEvent): void {
    const had = this.since.get(e.sandboxId);
    if (e.type === "paused") {
      // An older pause event arriving late does not move a newer one back.
      if (had?.from === "event" && had.at > e.timestamp) return;
      this.since.set(e.sandboxId, { at: e.timestamp, from: "event" });
    } else if ((e.type === "resumed" || e.type === "killed") && had && had.at <= e.timestamp) {
      this.since.delete(e.sandboxId);
    }
  }

  /**
   * A complete walk of this shard's sandboxes that began at `startedAt` and ended at `endedAt`: a
   * paused sandbox not yet known starts at `endedAt`; one the walk saw not paused (or not at all)
   * is forgotten, unless an event paused it after the walk began.
   */
  observe(sandboxes: readonly Sandbox[], startedAt: number, endedAt: number): void {
    const seen = new Set<string>();
    for (const s of sandboxes) {
      if (!this.paused.has(s.state)) continue;
      seen.add(s.id);
      if (!this.since.has(s.id)) this.since.set(s.id, { at: endedAt, from: "walk" });
    }
    for (const [id, p] of this.since)
      if (!seen.has(id) && !(p.from === "event" && p.at >= startedAt)) this.since.delete(id);
  }

  /** Epoch ms the sandbox was paused, when it is known to be paused. */
  pausedSince(id: string): number | undefined {
    return this.since.get(id)?.at;
  }

  /** Paused sandboxes by PAUSE_BANDS at `now`. */
  bands(now: number): number[] {
    const out = PAUSE_BANDS.map(() => 0);
    for (const p of this.since.values()) {
      const i = PAUSE_BANDS.findIndex((b) => Math.max(0, now - p.at) < b.below);
      out[i] = (out[i] ?? 0) + 1;
    }
    return out;
  }
}
