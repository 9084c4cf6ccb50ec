// /probe?module= answers within Prometheus' scrape timeout whatever the shared slot and terminate
// do: a slot held by another module is waited for only within the cap (then `success 0` with
// reason `slot`), and a slow terminate runs on after the answer, still deleting the sandbox.
import { afterEach, describe, expect, it } from "vitest";
import { get, type Rig, startRig, statusOf, until } from "./harness.js";

const CONFIG = `
probe:
  enabled: true
  concurrency: 1
  modules:
    - name: slow
      timeoutMs: 20s
      phaseTimeoutMs: 6s
    - name: quick
      timeoutMs: 20s
      phaseTimeoutMs: 6s
`;
const START = "POST /process.Process/Start";

let rig: Rig | undefined;

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

async function twoModules(): Promise<Rig> {
  // A 2 s request timeout and one retry: a hung confirm GET of terminate costs 2 s, then passes.
  rig = await startRig({
    argv: ["--config", "c.yaml", "--timeout", "2s", "--retries", "1"],
    files: { "c.yaml": CONFIG },
  });
  await rig.e.runCycle();
  return rig;
}

function expectEveryProbeSandboxDeleted(r: Rig): void {
  expect.soft(r.up.created.length, "probe sandboxes created").toBeGreaterThan(0);
  const undeleted = r.up.created.filter((id) => !r.up.deleted.includes(id));
  expect.soft(undeleted, "created but never deleted").toEqual([]);
  expect.soft(r.up.probeSandboxes(), "probe sandboxes still alive").toEqual([]);
}

describe("chaos: /probe within the scrape timeout", () => {
  it("answers success 0 (reason slot) while another module holds the only slot", async () => {
    const r = await twoModules();
    const probes = r.e.prober;
    if (!probes) throw new Error("no prober");
    // The slow module's exec gets keepalives and never an end: it holds the slot for its 6 s.
    r.up.fault(START, { kind: "endlessKeepalives", everyMs: 100 }, { times: 1 });
    const slow = probes.runOnce("slow");
    expect(await until(() => r.up.count(START) >= 1), "slow module reached exec").toBe(true);

    const res = await get(r, "/probe?module=quick", { "X-Prometheus-Scrape-Timeout-Seconds": "3" });
    // Answered while the slot holder still runs: the wait for the slot was bounded by the cap.
    expect(probes.prober("slow").status().inFlight, "slow module still running").toBe(true);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^sandbox_probe_success\{module="quick"[^}]*\} 0$/m);
    expect(res.text).toMatch(/phase="create",reason="slot"\} 1$/m);
    expect(r.up.count(START), "quick never reached exec").toBe(1);

    const slowResult = await slow;
    expect(slowResult?.failures[0]).toMatchObject({ phase: "exec", reason: "timeout" });
    await probes.idle();
    const { doc } = await statusOf(r);
    const quick = doc.probe?.modules.find((m) => m.module === "quick");
    expect(quick?.recentFailures[0]).toMatchObject({ phase: "create", reason: "slot" });
    expectEveryProbeSandboxDeleted(r);
  }, 30_000);

  it("answers before a slow terminate ends, and terminate still deletes the sandbox", async () => {
    const r = await twoModules();
    const probes = r.e.prober;
    if (!probes) throw new Error("no prober");
    // Terminate's confirming GET hangs once (2 s request timeout), then its retry sees 404.
    r.up.fault("GET /sandboxes/{id}", { kind: "hang" }, { times: 1 });
    const res = await get(r, "/probe?module=quick&debug=true", {
      "X-Prometheus-Scrape-Timeout-Seconds": "3",
    });
    expect(res.status).toBe(200);
    // Terminate was still running when the answer came.
    expect(probes.prober("quick").status().inFlight, "terminate still running").toBe(true);
    expect(res.text).toMatch(/^Timeout: 2500 ms \(the scrape timeout less 0.5 s\)$/m);
    expect(res.text).toMatch(/^Result: success$/m);
    expect(res.text).toMatch(/^Terminate: still running after this answer/m);

    await probes.idle();
    expectEveryProbeSandboxDeleted(r);
    expect(r.up.count("GET /sandboxes/{id}"), "confirm GET retried after its hang").toBe(2);
    const { doc } = await statusOf(r);
    const quick = doc.probe?.modules.find((m) => m.module === "quick");
    expect(quick?.recentFailures, "terminate's outcome: no failure").toEqual([]);
  }, 30_000);

  it("prints the timeout that applies: the module's total when the header asks for more", async () => {
    const r = await twoModules();
    const res = await get(r, "/probe?module=quick&debug=true", {
      "X-Prometheus-Scrape-Timeout-Seconds": "1000000000",
    });
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^Timeout: 20000 ms \(the module's total timeout\)$/m);
    await r.e.prober?.idle();
  }, 30_000);
});
