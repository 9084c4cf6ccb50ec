// A counting semaphore: at most `size` holders at once, the others wait in arrival order.

/** Gives `release` back when a slot is free; an aborted wait rejects with the signal's reason. */
export class Slots {
  private held = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];

  constructor(readonly size: number) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`slots: size ${size}`);
  }

  /** Holders right now. */
  get inUse(): number {
    return this.held;
  }

  /** Waits for a slot; call the returned function once to give it back. */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.held < this.size) {
      this.held++;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(entry);
    });
    return this.releaser();
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter; `held` stays the same.
      if (next) next.grant();
      else this.held--;
    };
  }
}
