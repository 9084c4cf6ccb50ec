// The exposition of the bench's fleet, pinned byte for byte: a refactor of the render path must not
// change one byte of it. An intended change of the output updates these digests in its commit.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { benchFleet } from "../../bench/render-fleet.js";
import { FakeClock } from "../../src/util/clock.js";
import { metricsWith, scrapeText, snapshot } from "./fixtures.js";

/** sha256 of each body (5,000 sandboxes; the per-sandbox bodies are about 2 MB). */
const DIGESTS = {
  aggregate: {
    prometheus: "3533770feef9cb0d037175496115bbc7179e9a38aed5a5086b5a14c5e256922b",
    openmetrics: "8b08db3b39ba016ae9988136f4f54247bb3734fc0d85cd9f97317bd1ca46c82e",
  },
  perSandbox: {
    prometheus: "f2ab846291a866e1b29678b71c80f61a0b874aaed10af5b652bccf6d34c60f6f",
    openmetrics: "79b6b8dabe387751298df61c804b199fbaa1d5830176d97f5f9618a931976195",
  },
};

describe("the bench fleet's exposition", () => {
  // The bench's fleet (bench/render-fleet.ts: seed 1, 5 templates, 3 nodes) on a fixed clock.
  const sandboxes = benchFleet(5_000, new FakeClock(1_790_000_000_000));
  for (const [mode, perSandboxMetrics] of [
    ["aggregate", false],
    ["perSandbox", true],
  ] as const)
    for (const format of ["prometheus", "openmetrics"] as const)
      it(`is byte-identical, ${mode}, ${format}`, async () => {
        const { metrics } = metricsWith({
          perSandboxMetrics,
          maxSandboxSeries: 100_000,
          metadataLabels: ["team"],
        });
        metrics.update(snapshot({ sandboxes }));
        const text = await scrapeText(metrics, format);
        expect(text).toContain("sandbox_sandboxes{");
        const digest = createHash("sha256").update(text).digest("hex");
        expect(digest).toBe(DIGESTS[mode][format]);
      });
});
