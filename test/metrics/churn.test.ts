import { describe, expect, it } from "vitest";
import { ChurnTracker } from "../../src/metrics/churn.js";
import { linesOf, metricsWith, sandbox, scrapeText, snapshot } from "./fixtures.js";

const walk = (...ids: string[]) => ids.map((id) => sandbox(id, { templateId: id[0] ?? "" }));

function counts(c: ChurnTracker): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const f of c.families("sandbox"))
    out[f.name] = f
      .render("prometheus")
      .split("\n")
      .filter((l) => l && !l.startsWith("#"));
  return out;
}

describe("ChurnTracker", () => {
  it("exports nothing before the first complete walk", () => {
    const c = new ChurnTracker();
    c.observe(walk("a1"), false);
    expect(c.families("sandbox")).toEqual([]);
  });

  it("counts nothing on the first complete walk, but shows 0 for its templates", () => {
    const c = new ChurnTracker();
    c.observe(walk("a1", "b1"), true);
    expect(counts(c)).toEqual({
      sandbox_sandboxes_created: [
        'sandbox_sandboxes_created_total{template="a"} 0',
        'sandbox_sandboxes_created_total{template="b"} 0',
      ],
      sandbox_sandboxes_disappeared: [
        'sandbox_sandboxes_disappeared_total{template="a"} 0',
        'sandbox_sandboxes_disappeared_total{template="b"} 0',
      ],
    });
  });

  it("counts the same whatever order the walk comes in, and a repeated id once", () => {
    const sorted = new ChurnTracker();
    const shuffled = new ChurnTracker();
    sorted.observe(walk("a1", "a2", "b1", "c1"), true);
    shuffled.observe(walk("c1", "a2", "b1", "a1", "a2"), true);
    sorted.observe(walk("a2", "b2", "c1", "c2"), true);
    shuffled.observe(walk("c2", "b2", "c1", "b2", "a2"), true);
    expect(counts(shuffled)).toEqual(counts(sorted));
    expect(counts(sorted).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 0',
      'sandbox_sandboxes_created_total{template="b"} 1',
      'sandbox_sandboxes_created_total{template="c"} 1',
    ]);
    expect(counts(sorted).sandbox_sandboxes_disappeared).toEqual([
      'sandbox_sandboxes_disappeared_total{template="a"} 1',
      'sandbox_sandboxes_disappeared_total{template="b"} 1',
      'sandbox_sandboxes_disappeared_total{template="c"} 0',
    ]);
  });

  it("counts ids appearing and vanishing between consecutive complete walks, by template", () => {
    const c = new ChurnTracker();
    c.observe(walk("a1", "a2", "b1"), true);
    c.observe(walk("a2", "b1", "b2", "c1"), true);
    c.observe(walk("a2", "c1"), true);
    expect(counts(c)).toEqual({
      sandbox_sandboxes_created: [
        'sandbox_sandboxes_created_total{template="a"} 0',
        'sandbox_sandboxes_created_total{template="b"} 1',
        'sandbox_sandboxes_created_total{template="c"} 1',
      ],
      sandbox_sandboxes_disappeared: [
        'sandbox_sandboxes_disappeared_total{template="a"} 1',
        'sandbox_sandboxes_disappeared_total{template="b"} 2',
        'sandbox_sandboxes_disappeared_total{template="c"} 0',
      ],
    });
  });

  it("ignores an incomplete walk and does not count across it: the next complete walk is a new baseline", () => {
    const c = new ChurnTracker();
    c.observe(walk("a1", "a2", "a3"), true);
    c.observe(walk("a1"), false);
    c.observe(walk("a1", "a4"), true);
    expect(counts(c).sandbox_sandboxes_disappeared).toEqual([
      'sandbox_sandboxes_disappeared_total{template="a"} 0',
    ]);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 0',
    ]);
    c.observe(walk("a4", "a5"), true);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 1',
    ]);
    expect(counts(c).sandbox_sandboxes_disappeared).toEqual([
      'sandbox_sandboxes_disappeared_total{template="a"} 1',
    ]);
  });

  it("counts an id listed twice in one walk once, and finds ids whatever their order", () => {
    const c = new ChurnTracker();
    c.observe(walk("a1", "a2", "a3", "a4"), true);
    c.observe(walk("a4", "a3", "a3", "a5", "a1"), true);
    expect(counts(c).sandbox_sandboxes_created).toEqual([
      'sandbox_sandboxes_created_total{template="a"} 1',
    ]);
    expect(counts(c).sandbox_sandboxes_disappeared).toEqual([
      'sandbox_sandboxes_disappeared_total{template="a"} 1',
    ]);
  });

  it("counts only this shard's sandboxes inside ExporterMetrics", async () => {
    const { metrics } = metricsWith({ shard: { index: 1, total: 2 } });
    const ids = Array.from({ length: 30 }, (_, i) => `s${i}`);
    metrics.update(snapshot({ sandboxes: ids.map((id) => sandbox(id)) }));
    metrics.update(snapshot({ cycle: 2, sandboxes: [] }));
    const text = await scrapeText(metrics);
    const gone = Number(linesOf(text, "sandbox_sandboxes_disappeared_total")[0]?.split(" ")[1]);
    expect(gone).toBeGreaterThan(0);
    expect(gone).toBeLessThan(30);
  });
});
