// The policy off the poll path: runs on the latest walked snapshot, one run at a time, so a slow
// run (thousands of log reads at 50 ms) never holds back a poll, and polls never wait for it.
import type { Snapshot } from "../collect/snapshot.js";

/** Single-flight runner: snapshots offered during a run replace each other; the newest runs next. */
export class PolicyLoop {
  private running: Promise<void> | undefined;
  private next: Snapshot | undefined;

  constructor(
    private readonly run: (snapshot: Snapshot) => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Runs the policy on `snapshot` now, or after the run in flight if no newer one comes first. */
  offer(snapshot: Snapshot): void {
    this.next = snapshot;
    this.running ??= this.drain();
  }

  /** Resolves when no run is in flight and none is waiting. */
  async idle(): Promise<void> {
    await this.running;
  }

  private async drain(): Promise<void> {
    try {
      // Each pass takes the waiting snapshot; offers are the only way one comes back.
      for (let s = this.next; s !== undefined; s = this.next) {
        this.next = undefined;
        try {
          await this.run(s);
        } catch (err) {
          this.onError(err);
        }
      }
    } finally {
      this.running = undefined;
    }
  }
}
