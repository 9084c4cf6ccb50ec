// The templateBuilds collector against the E2B-mode simulator over loopback: off by default, a
// failed build's reason read once (not every tick), exported, dropped once the template builds
// again, one failing build-status read costing only its template's reason, and a platform without
// the build-status route found unsupported.
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Poller } from "../../src/collect/poller.js";
import type { Snapshot } from "../../src/collect/snapshot.js";
import type { ControlClient } from "../../src/platform/control/control.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { testControl } from "../helpers/control.js";
import { advanceAndTick } from "../helpers/cycle.js";
import { type TestPollerOptions, testPoller } from "../helpers/poller.js";
import { linesOf, metricsWith, scrapeText } from "../metrics/fixtures.js";

const INTERVAL = 1_000;
const STATUS_ROUTE = "GET /templates/{id}/builds/{buildID}/status";
const TICKS = 5;
let sim: Simulator;
let clock: FakeClock;
let control: ControlClient;

beforeAll(async () => {
  clock = new FakeClock(1_790_000_000_000);
  sim = await startSimulator({ flavor: "e2b", sandboxes: 10, templates: 3, nodes: 1, clock });
  control = testControl({
    apiUrl: sim.apiUrl,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    dispatcher: new Agent(),
  });
});
beforeEach(() => {
  // Every template starts each test with a good latest build.
  for (const t of sim.state.templates)
    if (t.status !== "ready") sim.state.buildTemplate(t.templateID);
  sim.counters.reset();
});
afterEach(() => sim.faults.clear());
afterAll(async () => {
  await control.close();
  await sim.close();
});

function poller(over: Partial<TestPollerOptions> = {}): Poller {
  return testPoller({
    reader: control,
    clock,
    intervalMs: INTERVAL,
    ...over,
    poll: { templateBuilds: true, maxPages: 100, ...over.poll },
  });
}

const cycle = (p: Poller): Promise<Snapshot> => advanceAndTick(p, clock, INTERVAL);

/** Breaks the latest build of the first template; returns its id and the failed build's id. */
function failFirst(): { template: string; build: string } {
  const template = sim.state.templates[0]!.templateID;
  const build = sim.state.buildTemplate(template, "error", {
    message: 'failed to run command "npm ci": exit status 1',
    step: "run",
  });
  return { template, build };
}

describe("templateBuilds collector", () => {
  it("is off by default: no build-status request, and its status says skipped", async () => {
    failFirst();
    const asked = sim.counters.get(STATUS_ROUTE);
    const p = poller({ poll: { templateBuilds: false } });
    let s: Snapshot | undefined;
    for (let i = 0; i < TICKS; i++) s = await cycle(p);
    expect(sim.counters.get(STATUS_ROUTE)).toBe(asked);
    expect(s?.collectors.templateBuilds).toMatchObject({ skipped: true });
    expect(s?.templateBuilds).toBeUndefined();
  });

  it("runs on shard 0 only", async () => {
    failFirst();
    const asked = sim.counters.get(STATUS_ROUTE);
    const s = await cycle(poller({ clusterWide: false }));
    expect(sim.counters.get(STATUS_ROUTE)).toBe(asked);
    expect(s.collectors.templateBuilds).toMatchObject({ skipped: true });
  });

  it("reads a failed build's reason once, not every tick, and exports it", async () => {
    const { template, build } = failFirst();
    const asked = sim.counters.get(STATUS_ROUTE);
    // The template list, by either route: the templates collector reads E2B's paged /v2/templates.
    const lists = () => sim.counters.get("GET /templates") + sim.counters.get("GET /v2/templates");
    const listed = lists();
    const p = poller();
    const requests: number[] = [];
    let s: Snapshot | undefined;
    for (let i = 0; i < TICKS; i++) {
      s = await cycle(p);
      requests.push(s.collectors.templateBuilds.requests);
    }
    expect(sim.counters.get(STATUS_ROUTE) - asked).toBe(1);
    // Its own list read each tick (the templates collector reads its own), plus the one status read.
    expect(lists() - listed).toBe(2 * TICKS);
    expect(requests).toEqual([2, 1, 1, 1, 1]);
    const mine = s?.templateBuilds?.find((b) => b.templateId === template);
    expect(mine).toEqual({
      templateId: template,
      buildId: build,
      status: "error",
      failure: { message: 'failed to run command "npm ci": exit status 1', step: "run" },
    });

    const { metrics } = metricsWith();
    metrics.update(s as Snapshot);
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_template_build_failure_info")).toEqual([
      `sandbox_template_build_failure_info{template="${template}",build_id="${build}",step="run",message="failed to run command \\"npm ci\\": exit status 1"} 1`,
    ]);
    expect(
      linesOf(text, "sandbox_template_build_status").filter((l) => l.includes(template)),
    ).toEqual([
      `sandbox_template_build_status{template="${template}",status="building"} 0`,
      `sandbox_template_build_status{template="${template}",status="error"} 1`,
      `sandbox_template_build_status{template="${template}",status="ready"} 0`,
      `sandbox_template_build_status{template="${template}",status="waiting"} 0`,
    ]);
  });

  it("drops the failure once the template builds again, and reads a later failed build anew", async () => {
    const { template } = failFirst();
    const p = poller();
    await cycle(p);
    const asked = sim.counters.get(STATUS_ROUTE);
    sim.state.buildTemplate(template);
    const good = await cycle(p);
    expect(good.templateBuilds?.find((b) => b.templateId === template)).toEqual({
      templateId: template,
      buildId: sim.state.templates[0]!.buildID,
      status: "ready",
    });
    const { metrics } = metricsWith();
    metrics.update(good);
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_template_build_failure_info")).toEqual([]);
    expect(text).toContain(
      `sandbox_template_build_status{template="${template}",status="error"} 0`,
    );
    expect(text).toContain(
      `sandbox_template_build_status{template="${template}",status="ready"} 1`,
    );

    const again = sim.state.buildTemplate(template, "error", { message: "out of disk" });
    const bad = await cycle(p);
    expect(sim.counters.get(STATUS_ROUTE) - asked).toBe(1);
    expect(bad.templateBuilds?.find((b) => b.templateId === template)).toMatchObject({
      buildId: again,
      failure: { message: "out of disk" },
    });
  });

  it("a build-status read that fails costs only that template its reason, asked again after a tick's wait", async () => {
    const { template } = failFirst();
    const p = poller();
    sim.faults.route(STATUS_ROUTE, { status: 500 });
    const first = await cycle(p);
    expect(first.collectors.templateBuilds).toMatchObject({ success: true, stale: false });
    const mine = first.templateBuilds?.find((b) => b.templateId === template);
    expect(mine).toMatchObject({ status: "error" });
    expect(mine?.failure).toBeUndefined();
    // The other templates' builds are all there.
    expect(first.templateBuilds).toHaveLength(sim.state.templates.length);
    sim.faults.clear();
    const asked = sim.counters.get(STATUS_ROUTE);
    // One failed read: the next tick waits, the one after asks again.
    const waiting = await cycle(p);
    expect(sim.counters.get(STATUS_ROUTE) - asked).toBe(0);
    expect(waiting.templateBuilds?.find((b) => b.templateId === template)?.unread).toMatchObject({
      failures: 1,
    });
    const second = await cycle(p);
    expect(sim.counters.get(STATUS_ROUTE) - asked).toBe(1);
    expect(second.templateBuilds?.find((b) => b.templateId === template)?.failure).toMatchObject({
      step: "run",
    });
  });

  it("is unsupported where the build-status route answers 404 before any success, and taken back later", async () => {
    failFirst();
    const changes: Array<[string, boolean]> = [];
    const p = poller({
      // E2B serves no overview, and nodes to admins only: only this collector's changes count.
      onSupport: (c, supported) => {
        if (c === "templateBuilds") changes.push([c, supported]);
      },
    });
    sim.faults.route(STATUS_ROUTE, { status: 404 });
    const first = await cycle(p);
    expect(first.collectors.templateBuilds).toMatchObject({
      unsupported: true,
      success: false,
      stale: false,
    });
    const asked = sim.counters.get(STATUS_ROUTE);
    for (let i = 0; i < 5; i++)
      expect((await cycle(p)).collectors.templateBuilds.unsupported).toBe(true);
    // Not asked again before the re-check.
    expect(sim.counters.get(STATUS_ROUTE)).toBe(asked);
    sim.faults.clear();
    clock.advance(10 * INTERVAL);
    const back = await cycle(p);
    expect(back.collectors.templateBuilds).toMatchObject({ success: true, stale: false });
    expect(back.templateBuilds?.some((b) => b.failure !== undefined)).toBe(true);
    expect(changes).toEqual([
      ["templateBuilds", false],
      ["templateBuilds", true],
    ]);
  });
});
