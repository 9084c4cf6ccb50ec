// A bound on what requests in flight hold as a whole: how many at once, and the bytes they buffer.
// A request past either bound is refused at once by its caller rather than queued.

/** One admitted request's share of the budget. */
export interface InflightTicket {
  /** Adds `bytes` to what the request holds; false (nothing added) when the whole would pass the bound. */
  take(bytes: number): boolean;
  /** Gives back the request's place and every byte it took; later calls do nothing. */
  release(): void;
}

/** Counts the requests in flight and their bytes against `maxCount` and `maxBytes`. */
export class InflightBudget {
  #count = 0;
  #bytes = 0;
  #peakCount = 0;
  #peakBytes = 0;

  constructor(
    readonly maxCount: number,
    readonly maxBytes: number,
  ) {
    if (!(Number.isInteger(maxCount) && maxCount >= 1))
      throw new RangeError(`inflight budget: maxCount ${maxCount}`);
    if (!(Number.isInteger(maxBytes) && maxBytes >= 1))
      throw new RangeError(`inflight budget: maxBytes ${maxBytes}`);
  }

  /** Requests in flight now. */
  get count(): number {
    return this.#count;
  }

  /** Bytes held by the requests in flight now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The most requests ever in flight at once. */
  get peakCount(): number {
    return this.#peakCount;
  }

  /** The most bytes ever held at once. */
  get peakBytes(): number {
    return this.#peakBytes;
  }

  /** A ticket for one more request, or undefined when `maxCount` are in flight already. */
  enter(): InflightTicket | undefined {
    if (this.#count >= this.maxCount) return undefined;
    this.#count++;
    this.#peakCount = Math.max(this.#peakCount, this.#count);
    let held = 0;
    let open = true;
    return {
      take: (bytes) => {
        if (!open || this.#bytes + bytes > this.maxBytes) return false;
        held += bytes;
        this.#bytes += bytes;
        this.#peakBytes = Math.max(this.#peakBytes, this.#bytes);
        return true;
      },
      release: () => {
        if (!open) return;
        open = false;
        this.#count--;
        this.#bytes -= held;
        held = 0;
      },
    };
  }
}
