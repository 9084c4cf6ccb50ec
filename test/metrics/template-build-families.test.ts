// Template build families: the state-set, the failure info series cut by the label guard, and no
// second family for what the generic template families already export.
import { describe, expect, it } from "vitest";
import { TICK_COLLECTORS } from "../../src/catalog.js";
import { TemplateBuildFamilies } from "../../src/collect/template-builds/template-build-families.js";
import { ValueGuard } from "../../src/exposition/value-guard.js";
import { TickCollectorFamilies } from "../../src/metrics/tick-collector-families.js";
import { Normalizer, normalizeTemplate } from "../../src/platform/normalize/normalize.js";
import { snapshot } from "./fixtures.js";

const text = (families: { render(f: "prometheus"): string }[]): string =>
  families.map((f) => f.render("prometheus")).join("");

describe("TemplateBuildFamilies", () => {
  it("exports the four build statuses of every template, and a status outside them too", () => {
    const out = text(
      new TemplateBuildFamilies("sandbox").render(
        [
          { templateId: "a", buildId: "b1", status: "building" },
          { templateId: "b", status: "uploaded" },
        ],
        new ValueGuard(1_024),
      ),
    );
    expect(out).toContain(
      "# HELP sandbox_template_build_status Status of the template's latest build as a state-set (building, waiting, ready, error): 1 for the current value. Cached from the last successful poll of GET /templates.",
    );
    const a = out
      .split("\n")
      .filter((l) => l.startsWith('sandbox_template_build_status{template="a"'));
    expect(a).toEqual([
      'sandbox_template_build_status{template="a",status="building"} 1',
      'sandbox_template_build_status{template="a",status="error"} 0',
      'sandbox_template_build_status{template="a",status="ready"} 0',
      'sandbox_template_build_status{template="a",status="uploaded"} 0',
      'sandbox_template_build_status{template="a",status="waiting"} 0',
    ]);
    expect(out).toContain('sandbox_template_build_status{template="b",status="uploaded"} 1');
    expect(out).not.toContain("sandbox_template_build_failure_info");
  });

  it("cuts a long failure message with the label guard and names the build-status endpoint", () => {
    const guard = new ValueGuard(64);
    const message = `step failed: ${"x".repeat(500)}`;
    const out = text(
      new TemplateBuildFamilies("sandbox").render(
        [{ templateId: "a", buildId: "b1", status: "error", failure: { message, step: "base" } }],
        guard,
      ),
    );
    expect(out).toContain("GET /templates/{id}/builds/{buildID}/status");
    const line = out.split("\n").find((l) => l.startsWith("sandbox_template_build_failure_info{"));
    expect(line).toMatch(
      /^sandbox_template_build_failure_info\{template="a",build_id="b1",step="base",message="step failed: x+\.\.\.\[truncated [0-9a-f]{8}\]"\} 1$/,
    );
    expect(guard.truncated).toBe(1);
  });

  it("adds no family that the generic template families already export (build and spawn counts)", () => {
    const record = normalizeTemplate(new Normalizer(), {
      templateID: "a",
      buildID: "b1",
      buildStatus: "error",
      buildCount: 7,
      spawnCount: 1520,
      lastSpawnedAt: "2026-03-01T09:58:30Z",
    });
    const s = snapshot({
      templates: [record],
      templateBuilds: [
        { templateId: "a", buildId: "b1", status: "error", failure: { message: "m" } },
      ],
    });
    const { families } = new TickCollectorFamilies("sandbox", TICK_COLLECTORS).render(s);
    const names = families.filter((f) => f.size > 0).map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining([
        "sandbox_template_builds",
        "sandbox_template_spawns",
        "sandbox_template_last_spawned_at_timestamp_seconds",
        "sandbox_template_build_status",
        "sandbox_template_build_failure_info",
      ]),
    );
  });
});
