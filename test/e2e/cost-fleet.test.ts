// Spend and savings of a churning simulated fleet against the simulator's own truth. Real exporters
// over loopback: each run is made once (beforeAll) and shared by the tests that read it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
} from "../cost/fleet.js";

const STEPS = 120;
/** Seeds of the two-shard fleet: each must add up within 1 %, per template and per owner. */
const SHARD_SEEDS = [7, 11, 23];
const SHARD_STEPS = 80;
const RUN_MS = 300_000;

/** A run made once for the tests of its describe, stopped after them. */
function shared(make: () => Promise<FleetRun>): () => FleetRun {
  let run: FleetRun | undefined;
  beforeAll(async () => {
    run = await make();
  }, RUN_MS);
  afterAll(async () => {
    await run?.stop();
  });
  return () => {
    if (!run) throw new Error("the shared fleet run did not start");
    return run;
  };
}

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

describe("spend of a churning fleet with lifecycle events", () => {
  const fleet = shared(() => runFleet({ events: true, steps: STEPS }));

  it("equals the simulator's truth per template within 1 % with lifecycle events", async () => {
    const run = fleet();
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
  });

  it("counts policy savings by rule within 1 % of paused (done) and planned (dry-run) truth", async () => {
    const r = fleet();
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
  });
});

describe("spend of a churning fleet, events late or absent", () => {
  it(
    "equals the truth within 1 % when every event comes a cycle after the walk that missed it",
    async () => {
      const run = await runFleet({ events: true, steps: STEPS, eventLagMs: INTERVAL_MS });
      try {
        const until = lastWalk(run);
        const t = await truth(run, T0, until);
        const spend = await runningSpend(run);
        // A span the last walk missed and whose event is still hidden counts to the walk that saw it.
        within(spend, spanCost(t.sandboxes, T0, until), 0.01);
      } finally {
        await run.stop();
      }
    },
    RUN_MS,
  );

  it(
    "stays within the derived walk-only bound without events",
    async () => {
      const run = await runFleet({ events: false, steps: STEPS });
      try {
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
      } finally {
        await run.stop();
      }
    },
    RUN_MS,
  );
});

describe("restarts and shards", () => {
  it(
    "counts nothing twice across a restart: the new process starts from zero at its start",
    async () => {
      const restartAt = 60;
      const run = await runFleet({ events: true, steps: STEPS, restartAt });
      try {
        const started = run.walks[restartAt] as number;
        const until = lastWalk(run);
        const t = await truth(run, started, until);
        const spend = await runningSpend(run);
        // The first read after the start goes back an hour of events: none before the start counts.
        within(spend, spanCost(t.sandboxes, started, until), 0.01);
      } finally {
        await run.stop();
      }
    },
    RUN_MS,
  );

  for (const seed of SHARD_SEEDS)
    it(
      `has every shard date its own sandboxes from the events, summing to the fleet within 1 %, per owner too (seed ${seed})`,
      async () => {
        const run = await runFleet({ events: true, steps: SHARD_STEPS, shards: 2, seed });
        try {
          await shardsAddUp(run);
        } finally {
          await run.stop();
        }
      },
      RUN_MS,
    );
});

/** Each shard within 1 % of its own sandboxes' truth; their sum within 1 % of the fleet, by owner too. */
async function shardsAddUp(r: FleetRun): Promise<void> {
  const until = lastWalk(r);
  const t = await truth(r, T0, until);
  const one = (i: number) => ({
    ...r,
    exporters: [r.exporters[i] as (typeof r.exporters)[number]],
  });
  for (const i of [0, 1])
    within(
      await runningSpend(one(i)),
      spanCost(t.sandboxes, T0, until, (id) => inShard(id, i, 2)),
      0.01,
    );
  // Summed over both exporters: by template, and the owner of the 1-5 s runs, which the walks
  // mostly never see (their spend is dated by the events alone).
  within(await runningSpend(r), spanCost(t.sandboxes, T0, until), 0.01);
  const owners = await exported(r, "sandbox_estimated_cost_attributed_total", {}, "value");
  const flash = [...spanCost(t.sandboxes, T0, until, (id) => r.flash.has(id)).values()].reduce(
    (a, b) => a + b,
    0,
  );
  expect(flash).toBeGreaterThan(0);
  expect(Math.abs((owners.get(FLASH) ?? 0) - flash)).toBeLessThanOrEqual(flash * 0.01);
}
