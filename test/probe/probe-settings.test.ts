// The probe section's `steps`: its names and what each step needs come from the step declarations;
// the old key `phases` still works, with one start-up warning.

import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { ProbeControl, ProbeData } from "../../src/probe/phase.js";
import { ProbeService } from "../../src/probe/probe-service.js";
import { probeSchema } from "../../src/probe/probe-settings.js";
import { loadYaml as load, yamlProblems as problems } from "../helpers/config-file.js";
import { markerStep, withMarker } from "./marker-step.js";
import { INSTANCE } from "./setup.js";

/** Warnings a ProbeService logs as it is built from `yaml`'s probe section. */
function startupWarnings(yaml: string): { obj: object; msg: string }[] {
  const { probe, states } = load(yaml);
  const warnings: { obj: object; msg: string }[] = [];
  const none = {} as ProbeControl & ProbeData;
  new ProbeService({
    control: none,
    data: none,
    registry: new Registry(),
    namespace: "sandbox",
    instance: INSTANCE,
    concurrency: probe.concurrency,
    states,
    deprecatedKeys: probe.deprecatedKeys,
    logger: { debug() {}, info() {}, warn: (obj, msg) => warnings.push({ obj, msg }) },
    modules: probe.modules.map((m) => ({
      module: m.name,
      template: m.template,
      schedule: null,
      steps: m.steps,
      command: m.command,
      filePath: m.filePath,
      totalTimeoutMs: m.timeoutMs,
      phaseTimeoutMs: m.phaseTimeoutMs,
      lifecycleRounds: m.lifecycleRounds,
      autoPauseTimeoutMs: m.autoPauseTimeoutMs,
      http: m.http,
    })),
  });
  return warnings;
}

describe("probe steps", () => {
  it("are read from `steps`, top level and per module, with no warning", () => {
    const yaml = [
      "probe:",
      "  steps: [exec]",
      "  modules:",
      "    - name: a",
      "    - name: b",
      "      steps: [file, lifecycle]",
      "",
    ].join("\n");
    const { probe } = load(yaml);
    expect(probe.modules.map((m) => m.steps)).toEqual([["exec"], ["file", "lifecycle"]]);
    expect(probe.deprecatedKeys).toEqual([]);
    expect(startupWarnings(yaml)).toEqual([]);
  });

  it("are still read from the old key `phases`, named in one warning at start with its modules", () => {
    const yaml = [
      "probe:",
      "  phases: [exec]",
      "  phaseTimeouts: {create: 30s}",
      "  modules:",
      "    - name: a",
      "    - name: b",
      "      phases: [file, lifecycle]",
      "    - name: c",
      "      steps: [file]",
      "",
    ].join("\n");
    const { probe } = load(yaml);
    expect(probe.modules.map((m) => m.steps)).toEqual([["exec"], ["file", "lifecycle"], ["file"]]);
    // phaseTimeouts keeps holding phase names.
    expect(probe.modules[0]?.phaseTimeouts).toEqual({ create: 30_000 });
    const warnings = startupWarnings(yaml);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.obj).toEqual({
      settings: ["probe.phases", "probe.modules.1.phases (module b)"],
    });
    expect(warnings[0]?.msg).toContain("rename it to steps");
  });

  it("refuses `steps` and `phases` together, naming the old field", () => {
    const text = problems(
      [
        "probe:",
        "  steps: [exec]",
        "  phases: [exec]",
        "  modules:",
        "    - name: a",
        "      steps: [exec]",
        "      phases: [file]",
        "",
      ].join("\n"),
    ).join("\n");
    expect(text).toContain(
      "probe.phases (file c.yaml:probe.phases): expected steps alone (phases is its old name: remove it)",
    );
    expect(text).toContain(
      "probe.modules.0.phases (file c.yaml:probe.modules.0.phases): expected steps alone (phases is its old name: remove it)",
    );
  });

  it("refuses a step without the steps it needs, once, at the field that lists it", () => {
    const text = problems(
      ["probe:", "  modules:", "    - name: a", "      steps: [exec, autopause]", ""].join("\n"),
    );
    expect(text).toEqual([
      'probe.modules.0.steps (file c.yaml:probe.modules.0.steps): expected steps with file when autopause is listed (the autopause step checks the file), got ["exec","autopause"]',
    ]);
  });

  it("names the steps a module may list, from the registry", () => {
    const text = problems(["probe:", "  steps: [exec, dns]", ""].join("\n")).join("\n");
    expect(text).toContain("one of autopause, exec, file, http, autoresume, lifecycle");
  });
});

describe("a step of a registry with one more line", () => {
  const schema = probeSchema(withMarker());

  it("is a step name and its phases take timeouts", () => {
    const r = schema.safeParse({
      steps: ["file", "marker"],
      phaseTimeouts: { marker_read: "5s" },
    });
    expect(r.success).toBe(true);
    expect(r.data?.modules[0]?.steps).toEqual(["file", "marker"]);
    expect(r.data?.modules[0]?.phaseTimeouts).toEqual({ marker_read: 5_000 });
  });

  it("is refused without what it needs, at validation, naming the field", () => {
    const r = schema.safeParse({ modules: [{ name: "a", steps: ["marker"] }] });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      [
        "modules.0.steps",
        "steps with file when marker is listed (the marker step writes beside the nonce file)",
      ],
    ]);
  });

  it("is unknown to the registry without its line", () => {
    expect(probeSchema().safeParse({ steps: ["marker"] }).success).toBe(false);
    expect(markerStep().name).toBe("marker");
  });
});
