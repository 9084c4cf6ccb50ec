// A ring buffer of the last failed probe phases, for /status.

import type { ProbePhase } from "./phase.js";
import type { FailureReason } from "./probe-error.js";

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

  /** The entries, newest first. */
  entries(): FailureEntry[] {
    const n = this.ring.length;
    const out: FailureEntry[] = [];
    for (let i = 1; i <= n; i++) out.push(this.ring[(this.next - i + n) % n] as FailureEntry);
    return out;
  }
}
