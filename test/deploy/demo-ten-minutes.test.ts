// Ten minutes of the demo, on a fake clock, both flavors: the demo's fleet (its activity mix, and on
// E2B its churn every 2 s and timeouts, the work logged every minute) and the exporter with the
// demo's flags. Not one warning, no kill an alert is about, and the example policy never finds too
// many idle sandboxes, while its dry-run plan goes on.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import { demoSimulatorOptions, logWork, shapeDemoFleet } from "../../src/simulator/demo-setup.js";
import { Churn, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { startDemoExporter } from "../helpers/demo-exporter.js";

/**
 * One poll cycle every 20 s of the ten minutes (the demo polls every 5 s): the fleet changes on its
 * own clock, and each cycle's policy run reads ~40 logs at the request budget's real-time pace.
 */
const POLL_MS = 20_000;
const WORK_MS = 60_000;
/** Ten minutes of cycles. */
const CYCLES = 30;
/** The cycles of the last minute. */
const LAST_MINUTE = 3;
const TOO_MANY = "policy rule would act on too many sandboxes: acting on none";

interface Logged {
  level: number;
  msg: string;
  rule?: string;
  result?: string;
}

describe.each([
  { flavor: "sandboxapi", e2b: false },
  { flavor: "e2b", e2b: true },
])("ten minutes of the $flavor demo", ({ e2b }) => {
  let sim: Simulator;
  let exporter: Exporter;
  const dir = mkdtempSync(join(tmpdir(), "demo-ten-"));
  const lines: Logged[] = [];
  const kills: string[] = [];
  const idleDevCandidates: number[] = [];

  beforeAll(async () => {
    const clock = new FakeClock(Date.now());
    const { churn: churnOptions, ...options } = demoSimulatorOptions(e2b);
    sim = await startSimulator({ ...options, clock });
    const quiet = shapeDemoFleet(sim, e2b, false);
    const churn = churnOptions && new Churn(sim.state, churnOptions, 1);
    sim.state.onLifecycle((e) => {
      if (e.type === "killed") kills.push(e.killReason ?? "");
    });
    ({ exporter } = await startDemoExporter(sim, e2b, dir, lines, clock));
    const start = clock.now();
    let nextChurn = start + (churnOptions?.everyMs ?? 0);
    for (let i = 0; i < CYCLES; i++) {
      clock.advance(POLL_MS);
      for (let k = 0; churn && nextChurn <= clock.now() && k < POLL_MS; k++) {
        churn.tick();
        nextChurn += churnOptions?.everyMs ?? POLL_MS;
      }
      if ((clock.now() - start) % WORK_MS === 0) logWork(sim.state, quiet, clock.now());
      await exporter.runCycle();
      const status = (await (await fetch(`${exporter.server.url}/status`)).json()) as {
        policy: { rules: Array<{ name: string; candidates: number }> };
      };
      const idleDev = status.policy.rules.find((r) => r.name === "idle-dev");
      idleDevCandidates.push(idleDev?.candidates ?? 0);
    }
  }, 120_000);

  afterAll(async () => {
    await exporter?.stop();
    await sim?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("logs not one warning", () => {
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });

  it("kills no sandbox for a reason an alert is about", () => {
    // One kill every 2 s for ten minutes, and some timeouts.
    if (e2b) expect(kills.length).toBeGreaterThanOrEqual(300);
    expect(kills.filter((r) => r !== "request" && r !== "timeout")).toEqual([]);
  });

  it("never finds too many idle sandboxes, and goes on planning dry-run pauses", () => {
    expect(lines.filter((l) => l.msg === TOO_MANY)).toEqual([]);
    const planned = lines.filter(
      (l) => l.msg === "policy decision" && l.rule === "idle-dev" && l.result === "dry_run",
    );
    expect(planned.length).toBeGreaterThan(0);
    // Idle candidates in the last minute as in the first: the plan does not run dry.
    expect(Math.min(...idleDevCandidates.slice(-LAST_MINUTE))).toBeGreaterThan(0);
  });
});
