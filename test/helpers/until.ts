// Waiting on the event loop for something a test set going, bounded in turns (never a sleep for
// a fixed time): the listener and webhook floods use it.

/** Waits until `done()` holds, at most `turns` 1 ms timer turns; whether it did. */
export async function until(
  done: () => boolean | Promise<boolean>,
  turns = 5_000,
): Promise<boolean> {
  for (let i = 0; i < turns && !(await done()); i++) await new Promise((r) => setTimeout(r, 1));
  return done();
}
