import { describe, expect, it } from "vitest";
import { Slots } from "../../src/util/slots.js";

describe("Slots", () => {
  it("lets at most size holders in, and the waiters in arrival order", async () => {
    const slots = new Slots(2);
    const order: string[] = [];
    const a = await slots.acquire();
    const b = await slots.acquire();
    expect(slots.inUse).toBe(2);
    const c = slots.acquire().then((r) => {
      order.push("c");
      return r;
    });
    const d = slots.acquire().then((r) => {
      order.push("d");
      return r;
    });
    await Promise.resolve();
    expect(order).toEqual([]);
    a();
    a(); // a second release of the same slot frees nothing more
    const releaseC = await c;
    expect(order).toEqual(["c"]);
    expect(slots.inUse).toBe(2);
    b();
    const releaseD = await d;
    expect(order).toEqual(["c", "d"]);
    releaseC();
    releaseD();
    expect(slots.inUse).toBe(0);
  });

  it("drops an aborted waiter from the queue, with the signal's reason", async () => {
    const slots = new Slots(1);
    const held = await slots.acquire();
    const abort = new AbortController();
    const waiting = slots.acquire(abort.signal);
    abort.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    held();
    // The slot went back to the pool, not to the aborted waiter.
    expect(slots.inUse).toBe(0);
    await expect(slots.acquire(abort.signal)).rejects.toThrow("gave up");
  });

  it("refuses a size below one", () => {
    expect(() => new Slots(0)).toThrow(RangeError);
  });
});
