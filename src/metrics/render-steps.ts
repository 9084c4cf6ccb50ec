// Rendering a snapshot in steps: each part yields between slices of sandboxes, so updateAsync can
// give the event loop a turn (scrapes of the previous body are answered) while update runs the
// same steps straight through.

/** A render in steps: yields at points where the event loop may run, returns what it made. */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to the end at once. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Runs `steps`, awaiting `turn` (e.g. setImmediate) at every point they yield. */
export async function runStepsYielding<T>(
  steps: Steps<T>,
  turn: () => Promise<unknown>,
): Promise<T> {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await turn();
  }
}
