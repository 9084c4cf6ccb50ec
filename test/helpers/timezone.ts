// Runs the enclosing describe block with another local time zone, restoring the old one after.
import { afterAll, beforeAll } from "vitest";

/** Sets TZ for the tests of the current describe block (Node reads TZ on every Date call). */
export function inTimeZone(tz: string): void {
  const saved = process.env.TZ;
  beforeAll(() => {
    process.env.TZ = tz;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  });
}
