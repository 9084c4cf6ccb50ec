// The team collector reads after the events collector in the same tick (`after: "events"`): on
// the first tick of an exporter without platform.teamId, the events that name the team are read
// first, so team capacity is read on that very tick instead of failing ERR_TEAM_ID_UNKNOWN once.
// Against the E2B-mode simulator, which serves both.
import { Registry } from "prom-client";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsCollector } from "../../src/collect/events.js";
import { teamMetricsCollector } from "../../src/collect/team-metrics/team-metrics.js";
import { EventLedger } from "../../src/metrics/lifecycle-events.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { DEFAULT_TEAM_ID, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { testPoller, tickAndWait } from "../helpers/poller.js";

const LOOKBACK = 5 * 60_000;
let sim: Simulator;
let clock: FakeClock;
let control: ControlClient;

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  sim = await startSimulator({ flavor: "e2b", sandboxes: 5, templates: 1, nodes: 1, clock });
  control = testControl({
    apiUrl: sim.apiUrl,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    dispatcher: new Agent(),
  });
});
afterAll(async () => {
  await control.close();
  await sim.close();
});

describe("team capacity after the events of the same tick", () => {
  it("learns the team from this tick's events and reads its capacity on the first tick", async () => {
    // One create within the look-back: its event names the team.
    sim.state.addSandbox();
    clock.advance(1_000);
    const ledger = new EventLedger({
      ns: "sandbox",
      registry: new Registry(),
      clock,
      horizonMs: LOOKBACK,
    });
    const p = testPoller({
      reader: control,
      clock,
      intervalMs: 1_000,
      poll: { events: true, teamMetrics: true, eventsLookbackMs: LOOKBACK, eventsMaxPages: 10 },
      // The team collector first in the list: the order of reads comes from `after`, not from it.
      collectors: [teamMetricsCollector, eventsCollector],
      eventSink: ledger,
      teamId: () => ledger.teamId(),
    });
    const first = await tickAndWait(p);
    expect(first.collectors.events).toMatchObject({ success: true });
    expect(first.collectors.teamMetrics).toMatchObject({ success: true });
    expect(first.teamMetrics?.teamId).toBe(DEFAULT_TEAM_ID);
  });
});
