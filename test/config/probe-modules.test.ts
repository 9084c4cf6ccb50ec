import { describe, expect, it } from "vitest";
import { loadYaml as load, yamlProblems as problems } from "../helpers/config-file.js";

describe("probe.modules", () => {
  it("is the default module, from the top-level settings, when no module is listed", () => {
    const { probe } = load("probe: {template: t1, command: 'echo {nonce}!', timeoutMs: 30s}\n");
    expect(probe.modules).toEqual([
      {
        name: "default",
        template: "t1",
        schedule: { kind: "interval", ms: 60_000, text: "60s" },
        steps: ["exec", "file"],
        command: "echo {nonce}!",
        filePath: "/tmp/sandbox-exporter-probe.txt",
        timeoutMs: 30_000,
        phaseTimeoutMs: 20_000,
        phaseTimeouts: {},
        lifecycleRounds: 2,
        autoPauseTimeoutMs: 15_000,
        http: {
          port: 8000,
          path: "/sandbox-exporter-probe.txt",
          method: "GET",
          command: "python3 -m http.server {port} --directory {dir}",
          directory: "/tmp/sandbox-exporter-http",
          validStatusCodes: [],
          failIfBodyNotMatchesRegexp: [],
          headers: {},
          allowPublicTraffic: true,
        },
        labels: {},
      },
    ]);
  });

  it("fills what a module leaves out from the top-level settings", () => {
    const yaml = [
      "probe:",
      "  template: base",
      "  schedule: 30s",
      "  phaseTimeouts: {create: 40s}",
      "  modules:",
      "    - name: quick",
      "    - name: lifecycle",
      "      template: big",
      "      schedule: 5m",
      "      phases: [exec, file, lifecycle]",
      "      timeoutMs: 3m",
      "      phaseTimeouts: {resume: 90s}",
      "      lifecycleRounds: 3",
      "      labels: {team: sre}",
      "",
    ].join("\n");
    const [quick, lifecycle] = load(yaml).probe.modules;
    expect(quick).toMatchObject({
      name: "quick",
      template: "base",
      schedule: { ms: 30_000 },
      steps: ["exec", "file"],
      timeoutMs: 60_000,
      phaseTimeouts: { create: 40_000 },
      labels: {},
    });
    expect(lifecycle).toMatchObject({
      name: "lifecycle",
      template: "big",
      schedule: { ms: 300_000 },
      steps: ["exec", "file", "lifecycle"],
      timeoutMs: 180_000,
      phaseTimeouts: { create: 40_000, resume: 90_000 },
      lifecycleRounds: 3,
      labels: { team: "sre" },
    });
  });

  it("lays a module's http section over the top-level one, field by field", () => {
    const yaml = [
      "probe:",
      "  http:",
      "    port: 9000",
      "    headers: {X-Team: sre, Accept: text/plain}",
      "    allowPublicTraffic: false",
      "    validStatusCodes: [200]",
      "  modules:",
      "    - name: inherits",
      "    - name: other-path",
      "      http: {path: /health, headers: {accept: application/json}, validStatusCodes: [204]}",
      "",
    ].join("\n");
    const [inherits, otherPath] = load(yaml).probe.modules;
    expect(inherits?.http).toMatchObject({ port: 9000, path: "/sandbox-exporter-probe.txt" });
    expect(otherPath?.http).toEqual({
      port: 9000,
      path: "/health",
      method: "GET",
      command: "python3 -m http.server {port} --directory {dir}",
      directory: "/tmp/sandbox-exporter-http",
      validStatusCodes: [204],
      failIfBodyNotMatchesRegexp: [],
      headers: { "X-Team": "sre", accept: "application/json" },
      allowPublicTraffic: false,
    });
  });

  it("checks a module's http fields as the top-level ones", () => {
    const yaml = [
      "probe:",
      "  modules:",
      "    - name: a",
      "      http: {port: 0, headers: {Host: x}, retries: 1}",
      "",
    ].join("\n");
    const text = problems(yaml).join("\n");
    expect(text).toContain("probe.modules.0.http.port");
    expect(text).toContain("probe.modules.0.http.headers.Host");
    expect(text).toContain("probe.modules.0.http.retries");
  });

  it("names the module field that is wrong", () => {
    const yaml = [
      "probe:",
      "  modules:",
      "    - name: a",
      "      labels: {module: x, 0bad: y, ok: z}",
      "    - name: 'no spaces'",
      "      retries: 3",
      "",
    ].join("\n");
    expect(problems(yaml)).toEqual([
      'probe.modules.0.labels.module (file c.yaml:probe.modules.0.labels.module): expected a label name other than module, template, phase, point, reason, result, le, job, instance and __*, got "x"',
      'probe.modules.0.labels.0bad (file c.yaml:probe.modules.0.labels.0bad): expected a label name matching [a-zA-Z_][a-zA-Z0-9_]*, got "y"',
      'probe.modules.1.name (file c.yaml:probe.modules.1.name): expected a module name of letters, digits, _ . - (at most 63), got "no spaces"',
      "probe.modules.1.retries (file c.yaml:probe.modules.1.retries): expected a known setting (see --help)",
    ]);
  });

  it("refuses a repeated module name and a lifecycle without the file round trip", () => {
    const yaml = [
      "probe:",
      "  phases: [exec, lifecycle]",
      "  modules:",
      "    - name: a",
      "      phases: [file, lifecycle]",
      "    - name: a",
      "      phases: [lifecycle]",
      "",
    ].join("\n");
    const text = problems(yaml).join("\n");
    expect(text).toContain("probe.phases (file c.yaml:probe.phases): expected phases with file");
    expect(text).toContain("probe.modules.1.phases (file c.yaml:probe.modules.1.phases)");
    expect(text).toContain(
      "probe.modules.1.name (file c.yaml:probe.modules.1.name): expected a module name used once (a is repeated)",
    );
    expect(text).not.toContain("probe.modules.0.phases");
  });
});
