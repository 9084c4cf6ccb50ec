// updateAsync: the same exposition as update, rendered in slices while the previous body is served.
import { gunzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExporterMetrics, Format } from "../../src/metrics/exporter-metrics.js";
import type { Sandbox } from "../../src/platform/types.js";
import { metricsWith, sandbox, snapshot } from "./fixtures.js";

async function body(metrics: ExporterMetrics, format: Format, gzip = false): Promise<string> {
  const out = Buffer.concat((await metrics.render(format, gzip)).body);
  return (gzip ? gunzipSync(out) : out).toString("utf8");
}

/** A yieldToLoop that holds every turn until `open` is called. */
function gate(): { turn: () => Promise<void>; open: () => void; turns: () => number } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let turns = 0;
  return {
    turn: () => {
      turns++;
      return opened;
    },
    open: () => open(),
    turns: () => turns,
  };
}

const fleet = (ids: string[], state = "running"): Sandbox[] =>
  ids.map((id) => sandbox(id, { state, metadata: { team: `t-${id}` } }));

describe("ExporterMetrics.updateAsync", () => {
  it("serves the previous body, plain and gzip, until the new one is rendered and compressed", async () => {
    const g = gate();
    const { metrics } = metricsWith({
      perSandboxMetrics: true,
      renderSlice: 1,
      yieldToLoop: g.turn,
    });
    metrics.update(snapshot({ sandboxes: fleet(["a", "b"]) }));
    const before = await body(metrics, "prometheus");
    expect(await body(metrics, "prometheus", true)).toBe(before);
    const pending = metrics.updateAsync(snapshot({ cycle: 2, sandboxes: fleet(["a", "b", "c"]) }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.turns()).toBeGreaterThan(0);
    expect(await body(metrics, "prometheus")).toBe(before);
    expect(await body(metrics, "prometheus", true)).toBe(before);
    g.open();
    await pending;
    const after = await body(metrics, "prometheus");
    expect(after).toContain('sandbox_sandbox_info{sandbox_id="c"');
    expect(await body(metrics, "prometheus", true)).toBe(after);
  });

  it("renders byte for byte what update renders, cycle after cycle, in both formats", async () => {
    const ids = ["a", "b", "c", "d", "e", "f", "g"];
    const walk = fc.array(
      fc.record({
        id: fc.constantFrom(...ids),
        state: fc.constantFrom("running", "paused"),
        template: fc.constantFrom("base", "py"),
        cpu: fc.constantFrom(1, 2, 4),
      }),
      { maxLength: 12 },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(walk, { minLength: 1, maxLength: 5 }), async (walks) => {
        const options = { perSandboxMetrics: true, metadataLabels: ["team"] };
        const sync = metricsWith(options).metrics;
        const sliced = metricsWith({ ...options, renderSlice: 2 }).metrics;
        for (const [n, w] of walks.entries()) {
          const sandboxes = w.map((r) =>
            sandbox(r.id, { state: r.state, templateId: r.template, cpuCount: r.cpu }),
          );
          const snap = snapshot({ cycle: n + 1, sandboxes });
          sync.update(snap);
          await sliced.updateAsync(snap);
          for (const format of ["prometheus", "openmetrics"] as const) {
            const plain = await body(sync, format);
            expect(await body(sliced, format)).toBe(plain);
            expect(await body(sliced, format, true)).toBe(plain);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("runs overlapping calls one after the other and ends on the last one's snapshot", async () => {
    const { metrics } = metricsWith({ perSandboxMetrics: true, renderSlice: 1 });
    const reference = metricsWith({ perSandboxMetrics: true }).metrics;
    const first = snapshot({ cycle: 1, sandboxes: fleet(["a", "b"]) });
    const second = snapshot({ cycle: 2, sandboxes: fleet(["b", "c"], "paused") });
    await Promise.all([metrics.updateAsync(first), metrics.updateAsync(second)]);
    reference.update(first);
    reference.update(second);
    expect(await body(metrics, "openmetrics")).toBe(await body(reference, "openmetrics"));
  });

  it("refuses a synchronous update while an asynchronous one runs", async () => {
    const g = gate();
    const { metrics } = metricsWith({
      perSandboxMetrics: true,
      renderSlice: 1,
      yieldToLoop: g.turn,
    });
    const pending = metrics.updateAsync(snapshot({ sandboxes: fleet(["a", "b"]) }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(() => metrics.update(snapshot({ cycle: 2 }))).toThrow(/updateAsync/);
    g.open();
    await pending;
    metrics.update(snapshot({ cycle: 2, sandboxes: fleet(["a"]) }));
    expect(await body(metrics, "prometheus")).not.toContain('sandbox_id="b"');
  });

  it("settles once the latest body and its gzip are cached", async () => {
    const g = gate();
    const { metrics } = metricsWith({
      perSandboxMetrics: true,
      renderSlice: 1,
      yieldToLoop: g.turn,
    });
    await body(metrics, "prometheus", true); // a scraper asked for gzip
    const pending = metrics.updateAsync(snapshot({ sandboxes: fleet(["a"]) }));
    let settled = false;
    const done = metrics.settled().then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    g.open();
    await Promise.all([pending, done]);
    expect(settled).toBe(true);
    expect(await body(metrics, "prometheus", true)).toContain('sandbox_id="a"');
  });

  it("serves a big fleet's gzip body equal to the plain one, render after render", async () => {
    // Enough sandboxes that each section is written in many batches (and copied on the second walk).
    const ids = Array.from({ length: 5_000 }, (_, i) => `sbx-${String(i).padStart(5, "0")}`);
    const { metrics } = metricsWith({
      perSandboxMetrics: true,
      metadataLabels: ["team"],
      maxSandboxSeries: 10_000,
    });
    await body(metrics, "prometheus", true); // a scraper asked for gzip
    const walks = [
      fleet(ids),
      [...fleet(ids.slice(0, 2_500), "paused"), ...fleet(ids.slice(2_500))],
    ];
    for (const [n, sandboxes] of walks.entries()) {
      await metrics.updateAsync(snapshot({ cycle: n + 1, sandboxes }));
      const zipped = await metrics.render("prometheus", true);
      const plain = await body(metrics, "prometheus");
      expect(plain.length).toBeGreaterThan(400_000);
      expect(gunzipSync(Buffer.concat(zipped.body)).toString("utf8")).toBe(plain);
    }
  });
});
