// One module's run slot: at most one job in flight (stop() aborts it), and one of the shared run
// slots (the probe concurrency) held while it works on the platform.
import { deadline } from "../util/duration.js";
import type { Slots } from "../util/slots.js";
import type { ProbeResult } from "./runner.js";

/** An on-demand run's bound on waiting for a shared slot, and what it answers when none frees. */
export interface SlotWait<T> {
  ms: number;
  none: (waitedMs: number) => T;
}

/** Runs one job at a time, each within a shared slot. */
export class SingleRun {
  private current: { promise: Promise<unknown>; abort: AbortController } | undefined;

  constructor(
    private readonly slots: Slots | undefined,
    private readonly monotonic: () => number,
  ) {}

  /** Whether a job is in flight. */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Aborts the job in flight with `reason`. */
  abort(reason: unknown): void {
    this.current?.abort.abort(reason);
  }

  /** Resolves when no job is in flight (its failure ignored). */
  async idle(): Promise<void> {
    await this.current?.promise.catch(() => undefined);
  }

  /**
   * Holds this slot while `job` runs (abort() aborts its signal), and one of the shared slots while
   * it works; with `slotWait`, a shared slot that does not free in time answers `none`.
   */
  async run<T>(job: (signal: AbortSignal) => Promise<T>, slotWait?: SlotWait<T>): Promise<T> {
    const abort = new AbortController();
    const run = async () => {
      const begin = this.monotonic();
      const wait = slotWait ? deadline(slotWait.ms, abort.signal) : undefined;
      let release: (() => void) | undefined;
      try {
        release = await this.slots?.acquire(wait?.signal ?? abort.signal);
      } catch (err) {
        if (!slotWait || abort.signal.aborted) throw err;
        return slotWait.none(this.monotonic() - begin);
      } finally {
        wait?.clear();
      }
      try {
        return await job(abort.signal);
      } finally {
        release?.();
      }
    };
    const promise = run();
    this.current = { promise, abort };
    try {
      return await promise;
    } finally {
      this.current = undefined;
    }
  }
}

/** The result of an on-demand run that got no shared slot within `capMs`: create never ran. */
export function noSlotResult(
  now: number,
  capMs: number,
  waitedMs: number,
  size: number,
): ProbeResult {
  return {
    success: false,
    startedAt: now - waitedMs,
    finishedAt: now,
    durationSeconds: waitedMs / 1000,
    phases: {},
    stream: { points: {}, keepalives: 0 },
    failures: [
      {
        phase: "create",
        reason: "slot",
        message: `create: no probe slot freed within ${Math.round(capMs)} ms (probe concurrency ${size})`,
      },
    ],
  };
}
