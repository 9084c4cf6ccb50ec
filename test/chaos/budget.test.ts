// The request budget under a hostile platform: a Retry-After holds only the endpoint that sent
// it, staleness is read when scraped, a walk that never ends is bounded and leaves the probes
// their share, and one huge sandbox id spoils only itself in the usage read.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { promtoolReady } from "../helpers/promtool.js";
import { expectHealthyAndSealed, scrapeSamples, series, total } from "./checks.js";
import { makeFleet } from "./fleet.js";
import { type Rig, rssMb, startRig, statusOf, until } from "./harness.js";

const FLEET = 250;
/** A Retry-After no client should honour in full (11.5 days). */
const HUGE_RETRY_AFTER = "999999";

let rig: Rig | undefined;

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
}, 90_000);

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

async function start(argv: string[], fleet = makeFleet(FLEET)): Promise<{ r: Rig; rss: number }> {
  rig = await startRig({ fleet, argv: ["--poll-schedule", "1s", ...argv] });
  return { r: rig, rss: rssMb() };
}

describe("chaos: Retry-After holds", () => {
  // Before, the hold stopped every caller for maxRetryAfterMs (60 s): these cycles hung.
  it("holds only GET /sandboxes/metrics after its 429 asked for 999999 s: health and the walk go on", async () => {
    const { r, rss } = await start(["--poll-usage", "--poll-usage-interval", "1s"]);
    r.up.fault("GET /sandboxes/metrics", {
      kind: "status",
      status: 429,
      retryAfter: HUGE_RETRY_AFTER,
    });
    await r.e.runCycle();
    expect(r.up.count("GET /sandboxes/metrics"), "the usage read asked").toBeGreaterThan(0);
    const health = r.up.count("GET /health");
    const pages = r.up.count("GET /v2/sandboxes");
    for (let i = 0; i < 3; i++) await r.e.runCycle();
    expect.soft(r.up.count("GET /health") - health, "health read every cycle").toBe(3);
    expect.soft(r.up.count("GET /v2/sandboxes") - pages, "three walks of 3 pages").toBe(9);
    const m = await scrapeSamples(r);
    for (const c of ["health", "overview", "nodes", "templates", "sandboxes"])
      expect.soft(series(m, "sandbox_exporter_collect_success", `"${c}"`), c).toBe(1);
    expect
      .soft(
        series(m, "sandbox_exporter_api_errors_total", "/sandboxes/metrics", "rate_limited"),
        "the 429 counted",
      )
      .toBeGreaterThan(0);
    await expectHealthyAndSealed(r, rss);
  }, 30_000);

  it("holds only /cluster/overview after its 503 with Retry-After: the collector fails fast as held", async () => {
    const { r, rss } = await start([]);
    r.up.fault("GET /cluster/overview", {
      kind: "status",
      status: 503,
      retryAfter: HUGE_RETRY_AFTER,
    });
    await r.e.runCycle();
    const asked = r.up.count("GET /cluster/overview");
    const health = r.up.count("GET /health");
    await r.e.runCycle();
    await r.e.runCycle();
    expect.soft(r.up.count("GET /cluster/overview"), "not asked while held").toBe(asked);
    expect.soft(r.up.count("GET /health") - health, "health read every cycle").toBe(2);
    const { doc } = await statusOf(r);
    expect.soft(doc.collectors.overview?.error?.code).toBe("ERR_PLATFORM_HELD");
    expect.soft(doc.collectors.overview?.stale).toBe(true);
    expect.soft(doc.collectors.sandboxes?.success).toBe(true);
    const m = await scrapeSamples(r);
    expect.soft(total(m, "sandbox_sandboxes"), "sandboxes still counted").toBe(FLEET);
    await expectHealthyAndSealed(r, rss);
  }, 30_000);

  it("turns collect_stale to 1 at scrape time once data is two intervals old, with no tick at all", async () => {
    const { r } = await start([]);
    await r.e.runCycle();
    const fresh = await scrapeSamples(r);
    expect(series(fresh, "sandbox_exporter_collect_stale", '"health"')).toBe(0);
    // No cycle runs from here (manual schedule): only the clock moves. Bounded: 200 x 25 ms.
    const stale = await until(async () => {
      const m = await scrapeSamples(r);
      return series(m, "sandbox_exporter_collect_stale", '"health"') === 1 ? m : undefined;
    });
    expect(stale, "collect_stale{health} never turned 1 without a tick").toBeDefined();
    const { doc } = await statusOf(r);
    expect(doc.collectors.sandboxes?.stale).toBe(true);
  }, 30_000);
});

describe("chaos: an endless paging chain", () => {
  it("leaves the probe its share of the budget, and abandons the walk at poll.maxWalkMs", async () => {
    const { r, rss } = await start([
      ...["--probe", "--probe-timeout", "10s"],
      ...["--poll-max-walk", "4s", "--max-pages", "100000"],
    ]);
    await r.e.runCycle();
    const pages = r.up.count("GET /v2/sandboxes");
    r.up.paging = "endlessTokens";
    const cycle = r.e.runCycle();
    // The walk has spent the burst and asks for a page whenever a token frees.
    await until(() => r.up.count("GET /v2/sandboxes") - pages > 40);
    const created = r.up.created.length;
    const result = await r.e.prober?.runOnce();
    expect
      .soft(r.up.created.length - created, "the probe's POST /sandboxes reached the platform")
      .toBe(1);
    expect.soft(result?.success, `probe: ${JSON.stringify(result?.failures ?? [])}`).toBe(true);
    await cycle;
    const { doc } = await statusOf(r);
    expect.soft(doc.collectors.sandboxes?.error?.code).toBe("ERR_PAGING_WALK_TIMEOUT");
    const m = await scrapeSamples(r);
    expect.soft(total(m, "sandbox_exporter_sandbox_walks_abandoned_total")).toBe(1);
    expect.soft(total(m, "sandbox_sandboxes"), "the last complete walk is kept").toBe(FLEET);
    await expectHealthyAndSealed(r, rss);
  }, 60_000);
});

describe("chaos: a 100 KB sandbox id", () => {
  it("is left out of the usage read and counted; the other sandboxes' usage is read", async () => {
    const fleet = makeFleet(FLEET);
    const huge = `sb-${"x".repeat(100_000)}`;
    const first = [...fleet.sandboxes.values()].find((s) => s.state === "running");
    if (!first) throw new Error("the fleet has no running sandbox");
    fleet.sandboxes.set(huge, { ...first, sandboxID: huge });
    const running = [...fleet.sandboxes.values()].filter((s) => s.state === "running").length;
    const { r, rss } = await start(["--poll-usage", "--poll-usage-interval", "1s"], fleet);
    await r.e.runCycle();
    const m = await scrapeSamples(r);
    expect.soft(series(m, "sandbox_exporter_collect_success", '"usage"'), "usage read").toBe(1);
    expect.soft(total(m, "sandbox_exporter_usage_ids_skipped"), "the huge id counted").toBe(1);
    expect
      .soft(total(m, "sandbox_sandboxes_usage_reported"), "every other running sandbox has usage")
      .toBe(running - 1);
    await expectHealthyAndSealed(r, rss);
  }, 30_000);
});
