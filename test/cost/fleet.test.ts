// Spend and savings of a churning simulated fleet against the simulator's own truth.
import { afterEach, describe, expect, it } from "vitest";
import {
  DRY_AGE_MS,
  exported,
  FLASH,
  type FleetRun,
  INTERVAL_MS,
  inShard,
  perMs,
  RULE_DONE,
  RULE_DRY,
  runFleet,
  runningSpend,
  spanCost,
  T0,
  truth,
  walkOnlyBound,
} from "./fleet.js";

const STEPS = 120;
let run: FleetRun | undefined;

afterEach(async () => {
  await run?.stop();
  run = undefined;
});

/** Relative difference per template; every template of the truth must be exported. */
function within(got: Map<string, number>, want: Map<string, number>, share: number): void {
  expect(want.size).toBeGreaterThan(0);
  for (const [template, cost] of want) {
    const mine = got.get(template) ?? 0;
    expect(Number.isFinite(mine)).toBe(true);
    expect(Math.abs(mine - cost), `${template}: ${mine} vs ${cost}`).toBeLessThanOrEqual(
      cost * share,
    );
  }
}

function lastWalk(r: FleetRun): number {
  return r.walks[r.walks.length - 1] as number;
}

describe("spend of a churning fleet", () => {
  it("equals the simulator's truth per template within 1 % with lifecycle events", async () => {
    run = await runFleet({ events: true, steps: STEPS });
    const until = lastWalk(run);
    const t = await truth(run, T0, until);
    const spend = await runningSpend(run);
    within(spend, spanCost(t.sandboxes, T0, until), 0.01);
    // Runs born and killed between two walks, attributed through their events' metadata.
    const r = run;
    const owners = await exported(r, "sandbox_estimated_cost_attributed_total", {}, "value");
    const flashTruth = [
      ...spanCost(t.sandboxes, T0, until, (id) => r.flash.has(id)).values(),
    ].reduce((a, b) => a + b, 0);
    const unseen = [...r.flash].filter((id) => {
      const s = t.sandboxes[id]?.[0];
      return s?.to !== undefined && !r.walks.some((w) => w >= s.from && w <= (s.to ?? 0));
    });
    expect(unseen.length).toBeGreaterThan(10);
    expect(Math.abs((owners.get(FLASH) ?? 0) - flashTruth)).toBeLessThanOrEqual(flashTruth * 0.01);
  }, 120_000);

  it("equals the truth within 1 % when every event comes a cycle after the walk that missed it", async () => {
    run = await runFleet({ events: true, steps: STEPS, eventLagMs: INTERVAL_MS });
    const until = lastWalk(run);
    const t = await truth(run, T0, until);
    const spend = await runningSpend(run);
    // A span the last walk missed and whose event is still hidden counts to the walk that saw it.
    within(spend, spanCost(t.sandboxes, T0, until), 0.01);
  }, 120_000);

  it("stays within the derived walk-only bound without events", async () => {
    run = await runFleet({ events: false, steps: STEPS });
    const until = lastWalk(run);
    const t = await truth(run, T0, until);
    const spend = await runningSpend(run);
    const want = spanCost(t.sandboxes, T0, until);
    const bound = walkOnlyBound(run, t.sandboxes, T0, until);
    for (const [template, cost] of want) {
      const err = Math.abs((spend.get(template) ?? 0) - cost);
      expect(err, `${template}: bound ${bound.get(template)} of ${cost}`).toBeLessThanOrEqual(
        (bound.get(template) ?? 0) + 1e-12,
      );
    }
  }, 120_000);

  it("counts policy savings by rule within 1 % of paused (done) and planned (dry-run) truth", async () => {
    run = await runFleet({ events: true, steps: STEPS });
    const r = run;
    const until = lastWalk(r);
    const t = await truth(r, T0, until);
    let done = 0;
    let dry = 0;
    for (const [id, kind] of r.kinds) {
      const spans = t.sandboxes[id] ?? [];
      const ends = r.endAts.get(id) ?? [];
      const endAtOn = (at: number): number =>
        ends.filter((e) => e.at <= at).at(-1)?.endAt ?? Number.POSITIVE_INFINITY;
      if (kind === "pausable") {
        for (const s of spans)
          if (s.state === "paused")
            done +=
              Math.max(0, Math.min(s.to ?? until, until, endAtOn(s.from)) - s.from) * perMs(s);
      } else {
        const first = spans[0];
        if (first?.state !== "running") continue;
        const to = first.to ?? Number.POSITIVE_INFINITY;
        const planned = r.walks.find((w) => w - first.from > DRY_AGE_MS && w < to);
        if (planned === undefined) continue;
        dry += Math.max(0, Math.min(to, until, endAtOn(first.from)) - planned) * perMs(first);
      }
    }
    const saved = await exported(r, "sandbox_policy_estimated_savings_total", {}, "rule");
    expect(done).toBeGreaterThan(0);
    expect(dry).toBeGreaterThan(0);
    expect(Math.abs((saved.get(RULE_DONE) ?? 0) - done)).toBeLessThanOrEqual(done * 0.01);
    expect(Math.abs((saved.get(RULE_DRY) ?? 0) - dry)).toBeLessThanOrEqual(dry * 0.01);
  }, 120_000);
});

describe("restarts and shards", () => {
  it("counts nothing twice across a restart: the new process starts from zero at its start", async () => {
    const restartAt = 60;
    run = await runFleet({ events: true, steps: STEPS, restartAt });
    const started = run.walks[restartAt] as number;
    const until = lastWalk(run);
    const t = await truth(run, started, until);
    const spend = await runningSpend(run);
    // The first read after the start goes back an hour of events: none before the start counts.
    within(spend, spanCost(t.sandboxes, started, until), 0.01);
  }, 120_000);

  it("has every shard count its own sandboxes, summing to the fleet", async () => {
    run = await runFleet({ events: true, steps: STEPS, shards: 2 });
    const r = run;
    const until = lastWalk(r);
    const t = await truth(r, T0, until);
    const perShard = await Promise.all(
      r.exporters.map(async (e) => {
        const one = { ...r, exporters: [e] };
        return runningSpend(one);
      }),
    );
    // Shard 0 reads the events (and keeps its own); shard 1 has only its walks.
    within(
      perShard[0] as Map<string, number>,
      spanCost(t.sandboxes, T0, until, (id) => inShard(id, 0, 2)),
      0.01,
    );
    const bound1 = walkOnlyBound(r, t.sandboxes, T0, until, (id) => inShard(id, 1, 2));
    const fleet = spanCost(t.sandboxes, T0, until);
    for (const [template, cost] of fleet) {
      const sum = (perShard[0]?.get(template) ?? 0) + (perShard[1]?.get(template) ?? 0);
      expect(Math.abs(sum - cost)).toBeLessThanOrEqual(cost * 0.01 + (bound1.get(template) ?? 0));
    }
  }, 120_000);
});
