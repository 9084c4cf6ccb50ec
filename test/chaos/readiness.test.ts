// Readiness against a platform that fails every request of the first cycle: not ready until some
// data is good, and the log does not claim to serve good data it never had.
import { afterEach, describe, expect, it } from "vitest";
import { get, type Rig, startRig, statusOf } from "./harness.js";
import { MANAGEMENT_ROUTES } from "./upstream.js";

let rig: Rig | undefined;

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

describe("chaos: readiness after a first cycle that failed entirely", () => {
  it("answers /readyz 503 until some collector succeeded, then 200 while serving the last good data", async () => {
    rig = await startRig();
    const r = rig;
    for (const route of MANAGEMENT_ROUTES) r.up.fault(route, { kind: "status", status: 500 });
    await r.e.runCycle();
    const before = await get(r, "/readyz");
    expect(before.status).toBe(503);
    expect(before.text).toBe("no good data yet\n");
    expect((await statusOf(r)).doc.ready).toBe(false);
    expect(r.log.find("collector failed; no good data yet").length).toBeGreaterThan(0);
    expect(r.log.find("collector failed; serving last good data")).toEqual([]);

    r.up.clearFaults();
    await r.e.runCycle();
    expect((await get(r, "/readyz")).status).toBe(200);
    expect((await statusOf(r)).doc.ready).toBe(true);

    // Failing again after good data: still ready, the last good data served and said so.
    for (const route of MANAGEMENT_ROUTES) r.up.fault(route, { kind: "status", status: 500 });
    await r.e.runCycle();
    expect((await get(r, "/readyz")).status).toBe(200);
    expect(r.log.find("collector failed; serving last good data").length).toBeGreaterThan(0);
  });
});
