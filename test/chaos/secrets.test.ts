// Every management route echoes the request headers, API key included, into its answer: as
// fields of a 200's JSON (into records, lists, metadata), as a plain-text dump, or in a
// 400/404/500 body. The key must reach no log line, no /status byte and no /metrics byte.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { promtoolReady } from "../helpers/promtool.js";
import { expectHealthyAndSealed } from "./checks.js";
import type { Fault } from "./faults.js";
import { makeFleet, makeSandbox, rng } from "./fleet.js";
import { get, IDLE_CHAOS_RULES, keyCount, type Rig, rssMb, startRig, statusOf } from "./harness.js";
import { MANAGEMENT_ROUTES, type Route } from "./upstream.js";

const HOUR_MS = 3_600_000;
/** Routes the exporter calls: every management route but resume (nothing resumes). */
const CALLED: Route[] = MANAGEMENT_ROUTES.filter((r) => r !== "POST /sandboxes/{id}/resume");

let rig: Rig | undefined;

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
}, 90_000);

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

/** A fleet with two idle sandboxes the policy pauses (so pause, logs and re-reads are called). */
function fleetWithIdle() {
  const fleet = makeFleet(250);
  const r = rng(7);
  for (let i = 0; i < 2; i++) {
    const s = makeSandbox(r, 10_000 + i);
    s.state = "running";
    s.startedAt = Date.now() - 3 * HOUR_MS;
    s.lastLogAt = Date.now() - 2 * HOUR_MS;
    s.metadata = { team: "ml", chaos: "idle" };
    fleet.sandboxes.set(s.sandboxID, s);
  }
  return fleet;
}

const VARIANTS: Array<{ name: string; fault: Fault; covers: boolean }> = [
  { name: "200, headers merged into every answer", fault: { kind: "echo" }, covers: true },
  { name: "200, a plain-text header dump", fault: { kind: "echo", text: true }, covers: false },
  { name: "400 with the headers in the body", fault: { kind: "echo", status: 400 }, covers: false },
  { name: "404 with the headers in the body", fault: { kind: "echo", status: 404 }, covers: false },
  { name: "500 with the headers in the body", fault: { kind: "echo", status: 500 }, covers: false },
];

describe("chaos: an upstream that echoes the API key", () => {
  it.each(VARIANTS)("never prints the key: $name, on every endpoint", async (v) => {
    rig = await startRig({
      fleet: fleetWithIdle(),
      argv: [
        ...["--per-sandbox-metrics", "--metadata-labels", "team,echo"],
        ...["--node-details", "--template-details"],
        ...["--probe", "--probe-timeout", "5s"],
        ...["--policy", "rules.yaml", "--policy-dry-run=false"],
      ],
      files: { "rules.yaml": IDLE_CHAOS_RULES },
    });
    const r = rig;
    const rss = rssMb();
    for (const route of MANAGEMENT_ROUTES) r.up.fault(route, v.fault);
    await r.e.runCycle();
    await r.e.runCycle();
    await r.e.prober?.runOnce();
    // The debug trace carries every call's outcome and error text: the most a key could leak into.
    const onDemand = await get(r, "/probe?debug=true");
    expect.soft(onDemand.text, "the /probe debug trace").toMatch(/^Result: /m);
    expect.soft(keyCount(onDemand.text), "API key in the /probe debug trace").toBe(0);
    await r.e.runCycle();
    if (v.covers) {
      const missed = CALLED.filter((route) => r.up.count(route) === 0);
      expect.soft(missed, "management routes the exporter never called").toEqual([]);
    }
    expect.soft(r.log.written, "log lines written").toBeGreaterThan(0);
    await expectHealthyAndSealed(r, rss);
  });
});

/** The agent tokens the upstream hands out (`agent-token-<id>`), in any exit's text. */
function agentTokenCount(text: string): number {
  return text.split("agent-token-").length - 1;
}

describe("chaos: an agent whose end event echoes its request headers", () => {
  it("never prints the agent's access token: trace, /status, /metrics, /probe, log", async () => {
    rig = await startRig({ argv: ["--probe", "--probe-timeout", "5s"] });
    const r = rig;
    const rss = rssMb();
    r.up.fault("POST /process.Process/Start", { kind: "echo" });
    await r.e.runCycle();
    await r.e.prober?.runOnce();
    const trace = await get(r, "/probe?debug=true");
    await r.e.prober?.idle();
    // The echo reached each exit (so a pass is no accident): redacted, never the token itself.
    expect.soft(trace.text, "the /probe debug trace").toMatch(/stream event end \(exit 1, error /);
    expect.soft(trace.text, "the /probe debug trace").toContain("[REDACTED]");
    expect.soft(agentTokenCount(trace.text), "agent token in the /probe debug trace").toBe(0);
    const { doc, text: status } = await statusOf(r);
    const failures = doc.probe?.modules[0]?.recentFailures ?? [];
    expect
      .soft(
        failures.map((f) => f.reason),
        "recent failures",
      )
      .toContain("exit_code");
    expect.soft(JSON.stringify(failures), "/status recentFailures").toContain("[REDACTED]");
    expect.soft(agentTokenCount(status), "agent token in /status").toBe(0);
    const metrics = await get(r, "/metrics");
    expect.soft(agentTokenCount(metrics.text), "agent token in /metrics").toBe(0);
    r.up.clearFaults();
    const leaking = r.log.lines.filter((l) => agentTokenCount(l) > 0);
    expect.soft(leaking.slice(0, 3), "log lines with an agent token").toEqual([]);
    expect.soft(r.log.find("probe failed").length, "probe failures logged").toBeGreaterThan(0);
    await expectHealthyAndSealed(r, rss);
  });
});
