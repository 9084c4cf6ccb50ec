// The long-running check: a fleet of a few hundred sandboxes that changes every cycle (creates,
// deletes, pauses and resumes, metadata, template, cpu and memory changes) under per-sandbox
// series. After every cycle the exposition is valid in both formats, and its per-sandbox lines
// are exactly what a freshly started exporter renders for the same fleet.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { promtool, promtoolReady } from "../helpers/promtool.js";
import { openMetricsProblems } from "../metrics/fixtures.js";
import { liveAggregateLines, perSandboxLines, setDiff } from "./exposition.js";
import { churn, makeFleet, rng } from "./fleet.js";
import { API_KEY, exporterOn, get, keyCount, OPENMETRICS, type Rig, startRig } from "./harness.js";

const FLEET = 300;
const CYCLES = 32;
/** The list order flips this often (the platform may page by id or newest first). */
const ORDER_EVERY = 8;
const ARGV = ["--per-sandbox-metrics", "--metadata-labels", "team,env"];
/** Problems kept for the failure message. */
const SHOWN = 12;

let rig: Rig | undefined;

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
}, 90_000);

afterAll(async () => {
  await rig?.stop();
});

/** The exposition a freshly started exporter renders for the upstream's current fleet. */
async function freshRender(r: Rig): Promise<string> {
  const fresh = await exporterOn(r.up, ARGV);
  try {
    await fresh.e.runCycle();
    return (await get(fresh, "/metrics")).text;
  } finally {
    await fresh.e.stop();
  }
}

describe("chaos: a churning fleet over many cycles", () => {
  it(`renders per-sandbox series exactly as a fresh exporter would, ${CYCLES} cycles of churn`, async () => {
    rig = await startRig({ fleet: makeFleet(FLEET, 42), argv: ARGV });
    const r = rig;
    const random = rng(4242);
    const next = { n: 100_000 };
    const problems: string[] = [];
    const note = (cycle: number, what: string): void => {
      problems.push(`cycle ${cycle}: ${what}`);
    };
    let changes = 0;
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      if (cycle > 1) {
        const c = churn(r.up.fleet, random, next, FLEET);
        changes += Object.values(c).reduce((a, b) => a + b, 0);
      }
      r.up.listOrder = Math.floor((cycle - 1) / ORDER_EVERY) % 2 === 0 ? "id" : "started";
      await r.e.runCycle();
      const plain = await get(r, "/metrics");
      const om = await get(r, "/metrics", { accept: OPENMETRICS });
      if (plain.status !== 200 || om.status !== 200)
        note(cycle, `/metrics answered ${plain.status} / ${om.status}`);
      const check = promtool(plain.text);
      if (check.status !== 0) note(cycle, `promtool: ${check.output.slice(0, 400)}`);
      const omProblems = openMetricsProblems(om.text);
      if (omProblems.length) note(cycle, `OpenMetrics: ${omProblems.slice(0, 3).join("; ")}`);
      const mine = perSandboxLines(plain.text);
      const infoLines = [...mine].filter((l) => l.startsWith("sandbox_sandbox_info{")).length;
      if (infoLines !== r.up.fleet.sandboxes.size)
        note(cycle, `${infoLines} sandbox_info lines for ${r.up.fleet.sandboxes.size} sandboxes`);
      const fresh = await freshRender(r);
      const diff = setDiff(mine, perSandboxLines(fresh));
      if (diff) note(cycle, `per-sandbox lines differ from a fresh exporter's\n${diff}`);
      const aggDiff = setDiff(liveAggregateLines(plain.text), liveAggregateLines(fresh));
      if (aggDiff) note(cycle, `aggregates differ from a fresh exporter's\n${aggDiff}`);
      if (keyCount(plain.text) + keyCount(om.text) > 0) note(cycle, "API key in /metrics");
    }
    expect(changes, "the fleet changed").toBeGreaterThan(CYCLES * 20);
    expect(r.log.leaks, `${API_KEY} in the log`).toEqual([]);
    expect(
      problems.slice(0, SHOWN),
      `${problems.length} problems over ${CYCLES} cycles (first ${SHOWN} shown)`,
    ).toEqual([]);
  }, 60_000);
});
