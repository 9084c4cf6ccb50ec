import { describe, expect, it } from "vitest";
import { ValueGuard } from "../../src/exposition/value-guard.js";
import { linesOf, metricsWith, sandbox, scrapeText, snapshot } from "../metrics/fixtures.js";
import { hugeLabelText } from "../metrics/scenes.js";

describe("ValueGuard", () => {
  it("keeps values up to the limit and cuts longer ones to exactly the limit, with a visible suffix", () => {
    const g = new ValueGuard(32);
    expect(g.label("x".repeat(32))).toBe("x".repeat(32));
    const cut = g.label("y".repeat(33));
    expect(cut).toHaveLength(32);
    expect(cut).toMatch(/^y{9}\.\.\.\[truncated [0-9a-f]{8}\]$/);
    expect(g.truncated).toBe(1);
  });

  it("cuts two long values that share their start into two different values", () => {
    const g = new ValueGuard(40);
    const a = g.label(`${"p".repeat(100)}a`);
    const b = g.label(`${"p".repeat(100)}b`);
    expect(a).not.toBe(b);
    expect(g.truncated).toBe(2);
  });

  it("never leaves half of a surrogate pair at the cut", () => {
    const g = new ValueGuard(24);
    const cut = g.label("😀".repeat(20));
    expect(Buffer.from(cut, "utf8").toString("utf8")).toBe(cut);
    expect(cut).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it("drops negative resource values and counts them by field", () => {
    const g = new ValueGuard(1_024);
    expect(g.resource("cpu", -2)).toBeUndefined();
    expect(g.resource("cpu", 0)).toBe(0);
    expect(g.resource("memory", -1)).toBeUndefined();
    expect(g.resource("memory", undefined)).toBeUndefined();
    expect(g.resource("disk_used", Number.NaN)).toBeUndefined();
    expect(g.resource("memory_used", -1)).toBeUndefined();
    expect(g.resource("cpu_used", 0.25)).toBe(0.25);
    expect(g.negative).toEqual({ cpu: 1, memory: 1, cpu_used: 0, memory_used: 1, disk_used: 1 });
  });
});

describe("the exposition of hostile values", () => {
  it("cuts a 1 MB label value and counts it (promtool reads the body: test/promtool/)", async () => {
    const text = await hugeLabelText();
    expect(text.length).toBeLessThan(100_000);
    for (const line of text.split("\n"))
      for (const m of line.matchAll(/="((?:[^"\\]|\\.)*)"/g))
        expect((m[1] as string).length).toBeLessThanOrEqual(1_024);
    expect(linesOf(text, "sandbox_exporter_label_values_truncated")).toEqual([
      "sandbox_exporter_label_values_truncated 1",
    ]);
    expect(text).toMatch(/team="v+\.\.\.\[truncated [0-9a-f]{8}\]"/);
  });

  it("leaves negative cpu and memory out of the sums and per-sandbox series, and counts them", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true });
    metrics.update(
      snapshot({
        sandboxes: [
          sandbox("a", { cpuCount: -4, memoryMB: -512 }),
          sandbox("b", { cpuCount: 2, memoryMB: 512 }),
        ],
      }),
    );
    const text = await scrapeText(metrics);
    expect(linesOf(text, "sandbox_sandboxes_cpus")).toEqual([
      'sandbox_sandboxes_cpus{state="running",template="base"} 2',
    ]);
    expect(linesOf(text, "sandbox_sandboxes_memory_bytes")).toEqual([
      'sandbox_sandboxes_memory_bytes{state="running",template="base"} 536870912',
    ]);
    expect(linesOf(text, "sandbox_sandbox_cpus")).toEqual([
      'sandbox_sandbox_cpus{sandbox_id="b"} 2',
    ]);
    expect(linesOf(text, "sandbox_exporter_invalid_values")).toEqual([
      'sandbox_exporter_invalid_values{field="cpu"} 1',
      'sandbox_exporter_invalid_values{field="memory"} 1',
    ]);
  });
});
