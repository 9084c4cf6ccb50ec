import { describe, expect, it } from "vitest";
import { SandboxTable } from "../../src/collect/sandbox-table.js";
import { ChurnTracker, DISAPPEARANCE_REASONS } from "../../src/metrics/churn.js";
import { PROBE_TAG_KEY, type Sandbox } from "../../src/platform/types.js";
import { collectors, linesOf, metricsWith, sandbox, scrapeText, snapshot, T0 } from "./fixtures.js";

const walk = (...ids: string[]) => ids.map((id) => sandbox(id, { templateId: id[0] ?? "" }));
const tracker = () => new ChurnTracker({ pausedStates: ["paused", "Suspended"] });
const MIN = 60_000;

function counts(c: ChurnTracker): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const f of c.families("sandbox"))
    out[f.name] = f
      .render("prometheus")
      .split("\n")
      .filter((l) => l && !l.startsWith("#"));
  return out;
}

/** Disappearances per template over every reason, as `template count` lines. */
function goneByTemplate(c: ChurnTracker): string[] {
  const sums = new Map<string, number>();
  for (const line of counts(c).sandbox_sandboxes_disappeared ?? []) {
    const t = /template="([^"]*)"/.exec(line)?.[1] as string;
    sums.set(t, (sums.get(t) ?? 0) + Number(line.split(" ")[1]));
  }
  return [...sums].map(([t, n]) => `${t} ${n}`);
}

/** Non-zero disappearances as `template/reason count`. */
function goneByReason(c: ChurnTracker): string[] {
  return (counts(c).sandbox_sandboxes_disappeared ?? [])
    .map((l) => {
      const [, t, r] = /template="([^"]*)",reason="([^"]*)"/.exec(l) as unknown as string[];
      return `${t}/${r} ${l.split(" ")[1]}`;
    })
    .filter((l) => !l.endsWith(" 0"));
}

describe("ChurnTracker", () => {
  it("exports nothing before the first complete walk", () => {
    const c = tracker();
    c.observe(walk("a1"), false, T0);
    expect(c.families("sandbox")).toEqual([]);
  });

  it("counts nothing on the first complete walk, but shows 0 for its templates and every reason", () => {
    const c = tracker();
    c.observe(walk("a1", "b1"), true, T0);
    const zeros = (t: string) =>
      DISAPPEARANCE_REASONS.map(
        (r) => `sandbox_sandboxes_disappeared_total{template="${t}",reason="${r}"} 0`,
      );
    expect(counts(c)).toEqual({
      sandbox_sandboxes_created: [
        'sandbox_sandboxes_created_total{template="a"} 0',
        'sandbox_sandboxes_created_total{template="b"} 0',
      ],
      sandbox_sandboxes_disappeared: [...zeros("a"), ...zeros("b")],
    });
    expect(DISAPPEARANCE_REASONS).toEqual(["early", "expired", "paused", "probe", "unknown"]);
  });

  it("counts the same whatever order the walk comes in, and a repeated id once", () => {
    const sorted = tracker();
    const shuffled = tracker();
    sorted.observe(walk("a1", "a2", "b1", "c1"), true, T0);
    shuffled.observe(walk("c1", "a2", "b1", "a1", "a2"), true, T0);
    sorted.observe(walk("a2", "b2", "c1", "c2"), true, T0);
    shuffled.observe(walk("c2", "b2", "c1", "b2", "a2"), true, T0);
    expect(counts(shuffled)).toEqual(counts(sorted));
    expect(counts(sorted).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 0',
      'sandbox_sandboxes_created_total{template="b"} 1',
      'sandbox_sandboxes_created_total{template="c"} 1',
    ]);
    expect(goneByTemplate(sorted)).toEqual(["a 1", "b 1", "c 0"]);
  });

  it("counts ids appearing and vanishing between consecutive complete walks, by template", () => {
    const c = tracker();
    c.observe(walk("a1", "a2", "b1"), true, T0);
    c.observe(walk("a2", "b1", "b2", "c1"), true, T0);
    c.observe(walk("a2", "c1"), true, T0);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 0',
      'sandbox_sandboxes_created_total{template="b"} 1',
      'sandbox_sandboxes_created_total{template="c"} 1',
    ]);
    // The fixture's sandboxes have no endAt.
    expect(goneByReason(c)).toEqual(["a/unknown 1", "b/unknown 2"]);
  });

  it("ignores an incomplete walk and does not count across it: the next complete walk is a new baseline", () => {
    const c = tracker();
    c.observe(walk("a1", "a2", "a3"), true, T0);
    c.observe(walk("a1"), false, T0);
    c.observe(walk("a1", "a4"), true, T0);
    expect(goneByTemplate(c)).toEqual(["a 0"]);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 0',
    ]);
    c.observe(walk("a4", "a5"), true, T0);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 1',
    ]);
    expect(goneByTemplate(c)).toEqual(["a 1"]);
  });

  it("counts an id listed twice in one walk once, and finds ids whatever their order", () => {
    const c = tracker();
    c.observe(walk("a1", "a2", "a3", "a4"), true, T0);
    c.observe(walk("a4", "a3", "a3", "a5", "a1"), true, T0);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 1',
    ]);
    expect(goneByTemplate(c)).toEqual(["a 1"]);
  });
});

describe("why a sandbox disappeared", () => {
  /** One of each reason, as the last walk before they vanish lists them. */
  const fleet = (): Sandbox[] => [
    sandbox("ends-at", { endAt: T0 + 10 * MIN }),
    sandbox("ended", { endAt: T0 + 9 * MIN }),
    sandbox("killed", { endAt: T0 + 10 * MIN + 1 }),
    sandbox("paused", { state: "paused", endAt: T0 + 60 * MIN }),
    sandbox("paused-past-end", { state: "suspended", endAt: T0 - MIN }),
    sandbox("probe", { metadata: { [PROBE_TAG_KEY]: "default" }, endAt: T0 + 60 * MIN }),
    sandbox("paused-probe", {
      state: "paused",
      metadata: { [PROBE_TAG_KEY]: "default" },
      endAt: T0 + 60 * MIN,
    }),
    sandbox("no-end"),
    sandbox("stays", { endAt: T0 + 5 * MIN }),
  ];
  const expected = [
    "base/early 1",
    "base/expired 2",
    "base/paused 2",
    "base/probe 2",
    "base/unknown 1",
  ];

  it("tells expired (at or after endAt, judged when the walk ended) from early, paused, probe and unknown", () => {
    const c = tracker();
    c.observe(fleet(), true, T0);
    // The walk that misses them ends exactly at the first one's endAt; "stays" is overdue, not gone.
    c.observe([sandbox("stays", { endAt: T0 + 5 * MIN })], true, T0 + 10 * MIN);
    expect(goneByReason(c)).toEqual(expected);
  });

  it("reads the same from a compact table, the probe tag kept and the order of the walk aside", () => {
    const table = (list: Sandbox[]) => {
      const b = SandboxTable.builder();
      for (const s of [...list].reverse()) b.push(s);
      return b.build();
    };
    const c = tracker();
    c.observe(table(fleet()), true, T0);
    c.observe(table([sandbox("stays", { endAt: T0 + 5 * MIN })]), true, T0 + 10 * MIN);
    expect(goneByReason(c)).toEqual(expected);
  });

  it("judges by the end time and state of the last walk that listed the sandbox", () => {
    const c = tracker();
    c.observe(
      [sandbox("extended", { endAt: T0 + MIN }), sandbox("resumed", { state: "paused" })],
      true,
      T0,
    );
    // Its timeout was extended, and the paused one resumed, before they vanished.
    c.observe(
      [sandbox("extended", { endAt: T0 + 30 * MIN }), sandbox("resumed", { endAt: T0 + MIN })],
      true,
      T0 + MIN / 2,
    );
    c.observe([], true, T0 + 2 * MIN);
    expect(goneByReason(c)).toEqual(["base/early 1", "base/expired 1"]);
  });

  it("never counts the sandboxes an incomplete walk missed, whatever their reason", () => {
    const c = tracker();
    c.observe(fleet(), true, T0);
    c.observe([], false, T0 + 10 * MIN);
    c.observe([], true, T0 + 20 * MIN);
    expect(goneByReason(c)).toEqual([]);
    expect(goneByTemplate(c)).toEqual(["base 0"]);
  });
});

describe("churn inside ExporterMetrics", () => {
  it("judges at the end of the walk that missed the sandbox, not when the snapshot was published", async () => {
    const { metrics } = metricsWith({ pausedStates: ["hibernated"] });
    const endAt = T0 + 5 * MIN;
    metrics.update(
      snapshot({
        sandboxes: [
          sandbox("a", { endAt }),
          sandbox("b", { state: "hibernated", endAt }),
          sandbox("c", { state: "paused", endAt: T0 + 60 * MIN }),
        ],
      }),
    );
    // The walk started 10 s before endAt and took 9 s; the snapshot went out after endAt.
    const walk = {
      lastAttemptAt: endAt - 10_000,
      lastSuccessAt: endAt - 10_000,
      durationMs: 9_000,
    };
    metrics.update(
      snapshot({
        cycle: 2,
        sandboxes: [],
        startedAt: endAt - 10_000,
        finishedAt: endAt + 60_000,
        collectors: collectors({ sandboxes: walk }),
      }),
    );
    const text = await scrapeText(metrics);
    // The configured paused states decide: "paused" is not one of them here.
    expect(
      linesOf(text, "sandbox_sandboxes_disappeared_total").filter((l) => !l.endsWith(" 0")),
    ).toEqual([
      'sandbox_sandboxes_disappeared_total{template="base",reason="early"} 2',
      'sandbox_sandboxes_disappeared_total{template="base",reason="paused"} 1',
    ]);
  });
});
