import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ChurnTracker, DISAPPEARANCE_REASONS } from "../../src/metrics/churn.js";
import { EventLedger } from "../../src/metrics/lifecycle-events.js";
import { KILL_REASONS, type KillReason } from "../../src/platform/events.js";
import { PROBE_TAG_KEY } from "../../src/platform/types.js";
import { FakeClock } from "../../src/util/clock.js";
import { sandbox, T0 } from "./fixtures.js";

const MIN = 60_000;

function setup() {
  const clock = new FakeClock(T0);
  const ledger = new EventLedger({
    ns: "sandbox",
    registry: new Registry(),
    clock,
    horizonMs: 60 * MIN,
  });
  const churn = new ChurnTracker({ pausedStates: ["paused"], kills: ledger });
  let n = 0;
  const kill = (sandboxId: string, killReason: KillReason) =>
    ledger.accept(
      {
        id: `ev-${n++}`,
        type: "killed",
        sandboxId,
        templateId: "base",
        timestamp: clock.now(),
        killReason,
      },
      "poll",
    );
  return { clock, ledger, churn, kill };
}

/** Non-zero disappearances as `template/reason count`. */
function gone(c: ChurnTracker): string[] {
  const f = c.families("sandbox")[1];
  return (f?.render("prometheus") ?? "")
    .split("\n")
    .filter((l) => l.startsWith("sandbox_"))
    .map((l) => {
      const [, t, r] = /template="([^"]*)",reason="([^"]*)"/.exec(l) as unknown as string[];
      return `${t}/${r} ${l.split(" ")[1]}`;
    })
    .filter((l) => !l.endsWith(" 0"));
}

describe("ChurnTracker with lifecycle events", () => {
  it("counts a vanished sandbox under the kill reason of its event, not the endAt guess", () => {
    const { churn, kill } = setup();
    // endAt an hour away: the heuristic would say early.
    churn.observe([sandbox("a", { endAt: T0 + 60 * MIN }), sandbox("b")], true, T0);
    kill("a", "orphaned");
    churn.observe([sandbox("b")], true, T0 + MIN);
    expect(gone(churn)).toEqual(["base/orphaned 1"]);
  });

  it("waits up to two more complete walks for the event, then falls back to the heuristic", () => {
    const { churn, kill } = setup();
    const keep = sandbox("keep");
    churn.observe(
      [sandbox("late", { endAt: T0 + 60 * MIN }), sandbox("never", { endAt: T0 + 5 * MIN }), keep],
      true,
      T0,
    );
    churn.observe([keep], true, T0 + 10 * MIN);
    expect(gone(churn)).toEqual([]);
    // An incomplete walk neither settles nor ages what waits.
    churn.observe([], false, T0 + 11 * MIN);
    kill("late", "resume_failed");
    churn.observe([keep], true, T0 + 12 * MIN);
    expect(gone(churn)).toEqual(["base/resume_failed 1"]);
    churn.observe([keep], true, T0 + 14 * MIN);
    // The second further walk: no event came for "never", judged as when it vanished.
    expect(gone(churn)).toEqual(["base/expired 1", "base/resume_failed 1"]);
    churn.observe([keep], true, T0 + 16 * MIN);
    expect(gone(churn)).toEqual(["base/expired 1", "base/resume_failed 1"]);
  });

  it("keeps the probe's own sandboxes as probe, whatever their event says", () => {
    const { churn, kill } = setup();
    churn.observe([sandbox("p", { metadata: { [PROBE_TAG_KEY]: "default" } })], true, T0);
    kill("p", "request");
    churn.observe([], true, T0 + MIN);
    expect(gone(churn)).toEqual(["base/probe 1"]);
  });

  it("exports every kill reason at 0 per template, after the heuristic's reasons", () => {
    const { churn } = setup();
    churn.observe([sandbox("a")], true, T0);
    const lines = (churn.families("sandbox")[1]?.render("prometheus") ?? "")
      .split("\n")
      .filter((l) => l.startsWith("sandbox_"));
    const reasons = [...DISAPPEARANCE_REASONS, ...KILL_REASONS.filter((r) => r !== "unknown")];
    expect(lines).toEqual(
      reasons.map((r) => `sandbox_sandboxes_disappeared_total{template="base",reason="${r}"} 0`),
    );
  });

  it("without events keeps the five heuristic reasons", () => {
    const churn = new ChurnTracker({ pausedStates: ["paused"] });
    churn.observe([sandbox("a")], true, T0);
    const text = churn.families("sandbox")[1]?.render("prometheus") ?? "";
    expect(text).not.toContain("orphaned");
    expect(text.split("\n").filter((l) => l.startsWith("sandbox_"))).toHaveLength(5);
  });
});
