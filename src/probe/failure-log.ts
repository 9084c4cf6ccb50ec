// A ring buffer of the last failed probe phases, for /status.
import type { FailureReason } from "./probe-error.js";
import type { ProbePhase } from "./probe-steps.js";
import type { ProbeResult } from "./runner.js";

/** One failed phase as /status shows it. */
export interface FailureEntry {
  /** ISO time the probe finished. */
  time: string;
  phase: ProbePhase;
  reason: FailureReason;
  error: string;
  /** "schedule" or "on_demand" (the /probe endpoint). */
  source: string;
  sandboxId?: string;
}

/** Keeps the last `capacity` entries; older ones are overwritten. */
export class FailureLog {
  private readonly ring: FailureEntry[] = [];
  private next = 0;

  constructor(private readonly capacity: number) {}

  /** Adds an entry, dropping the oldest when full. */
  push(entry: FailureEntry): void {
    if (this.capacity <= 0) return;
    if (this.ring.length < this.capacity) this.ring.push(entry);
    else this.ring[this.next] = entry;
    this.next = (this.next + 1) % this.capacity;
  }

  /**
   * Adds the result's failures from index `from` on (those an earlier call added are skipped);
   * the count of its failures, the `from` of the next call.
   */
  addResult(result: ProbeResult, source: string, from = 0): number {
    const time = new Date(result.finishedAt).toISOString();
    for (const f of result.failures.slice(from))
      this.push({
        time,
        phase: f.phase,
        reason: f.reason,
        error: f.message,
        source,
        ...(result.sandboxId ? { sandboxId: result.sandboxId } : {}),
      });
    return result.failures.length;
  }

  /** The entries, newest first. */
  entries(): FailureEntry[] {
    const n = this.ring.length;
    const out: FailureEntry[] = [];
    for (let i = 1; i <= n; i++) out.push(this.ring[(this.next - i + n) % n] as FailureEntry);
    return out;
  }
}
