// One record with a value that does not parse, among 200: the walk, the count and the policy's
// "complete walk" must stay; the value is dropped from that record alone.
import { afterEach, describe, expect, it } from "vitest";
import { expectAllCollectorsOk, scrapeSamples, total } from "./checks.js";
import { makeFleet, sandboxJson } from "./fleet.js";
import { type Rig, startRig, statusOf } from "./harness.js";

const FLEET = 200;
/** Poll interval of the manual cycles' bookkeeping (staleness, walk backoff); no timer runs. */
const POLL_INTERVAL = "1s";
const SUCCESS = 'sandbox_exporter_collect_success{collector="sandboxes"}';
const DROPPED = "sandbox_exporter_invalid_values_dropped_total";

let rig: Rig | undefined;

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

/** A rig over 200 sandboxes whose 101st list record carries `over` on top of its own fields. */
async function rigWithOneBadRecord(
  over: Record<string, unknown>,
): Promise<Rig & { others: { cpus: number; memoryBytes: number } }> {
  const fleet = makeFleet(FLEET);
  const victim = [...fleet.sandboxes.values()][100];
  if (victim === undefined) throw new Error("the fleet has no 101st sandbox");
  const record = { ...sandboxJson(victim), ...over };
  fleet.raw.set(victim.sandboxID, Buffer.from(JSON.stringify(record), "utf8"));
  rig = await startRig({ fleet, argv: ["--poll-schedule", POLL_INTERVAL] });
  const others = { cpus: 0, memoryBytes: 0 };
  for (const s of fleet.sandboxes.values()) {
    if (s === victim) continue;
    others.cpus += s.cpuCount;
    others.memoryBytes += s.memoryMB * 1_048_576;
  }
  return Object.assign(rig, { others });
}

describe("chaos: one record with an invalid value", () => {
  it.each([["not a date"], ["2026-13-45T99:99:99Z"], ["+275760-09-13T00:00:01Z"], [""]])(
    "endAt %j leaves the walk successful and complete, all 200 sandboxes counted",
    async (bad) => {
      const r = await rigWithOneBadRecord({ endAt: bad });
      for (let cycle = 0; cycle < 2; cycle++) {
        await r.e.runCycle();
        await expectAllCollectorsOk(r, `cycle ${cycle + 1}`);
        const m = await scrapeSamples(r);
        expect(m.get(SUCCESS), SUCCESS).toBe(1);
        expect(total(m, "sandbox_sandboxes"), "sandboxes counted").toBe(FLEET);
        const { doc } = await statusOf(r);
        expect(doc.sandboxes).toBe(FLEET);
        expect(doc.sandboxesComplete, "the walk read every page").toBe(true);
        expect(doc.collectors.sandboxes?.error ?? null).toBeNull();
        // Counted once per walk that read it, for as long as the record carries it.
        if (bad !== "")
          expect(m.get(`${DROPPED}{resource="sandbox",field="end_at"}`), "end_at dropped").toBe(
            cycle + 1,
          );
      }
    },
  );

  it("keeps the record whose cpu count is 1e308 and memory 0x10, leaving both out of the sums", async () => {
    const r = await rigWithOneBadRecord({ cpuCount: 1e308, memoryMB: "0x10" });
    await r.e.runCycle();
    const m = await scrapeSamples(r);
    expect(m.get(SUCCESS)).toBe(1);
    expect(total(m, "sandbox_sandboxes")).toBe(FLEET);
    // The record stays (counted above); only its unreadable values are left out of the sums.
    expect(total(m, "sandbox_sandboxes_cpus")).toBe(r.others.cpus);
    expect(total(m, "sandbox_sandboxes_memory_bytes")).toBe(r.others.memoryBytes);
    expect(total(m, DROPPED), "both values counted").toBe(2);
  });

  it("leaves out only a record without an id, and the walk still succeeds", async () => {
    const r = await rigWithOneBadRecord({ sandboxID: "" });
    await r.e.runCycle();
    const m = await scrapeSamples(r);
    expect(m.get(SUCCESS)).toBe(1);
    expect(total(m, "sandbox_sandboxes")).toBe(FLEET - 1);
    expect(m.get(`${DROPPED}{resource="sandbox",field="id"}`), "the record counted").toBe(1);
    expect((await statusOf(r)).doc.sandboxesComplete).toBe(true);
  });
});
