import { describe, expect, it } from "vitest";
import { helpText, parseFlags } from "../../src/config/flags.js";
import { SETTINGS } from "../../src/config/settings.js";

const raws = (argv: string[]) =>
  Object.fromEntries(parseFlags(argv).values.map((v) => [v.setting.path, v.raw]));

describe("parseFlags", () => {
  it("reads a bare boolean flag as true and --flag=false as false", () => {
    expect(raws(["--probe", "--per-sandbox-metrics=false"])).toEqual({
      "probe.enabled": "true",
      "metrics.perSandboxMetrics": "false",
    });
  });

  it("reads values given after a space or an equals sign, the last one winning", () => {
    expect(raws(["--page-limit", "5", "--listen=:1", "--page-limit=6"])).toEqual({
      "poll.pageLimit": "6",
      "server.listen": ":1",
    });
  });

  it("takes --config, --help, -h and --version apart from the settings", () => {
    const f = parseFlags(["--config", "c.yaml", "-h", "--version"]);
    expect(f).toMatchObject({ configFile: "c.yaml", help: true, version: true, problems: [] });
  });

  it("reports every unknown flag, missing value and stray argument, not just the first", () => {
    const f = parseFlags(["--bogus", "-x", "--page-limit", "--listen", ":1", "extra", "--timeout"]);
    expect(f.problems.map((p) => p.origin)).toEqual([
      "--bogus",
      "-x",
      "--page-limit",
      "argument 6",
      "--timeout",
    ]);
    expect(raws(["--page-limit", "--listen", ":1"])).toEqual({ "server.listen": ":1" });
    expect(f.problems.every((p) => p.path === "argv" && p.source === "flag")).toBe(true);
  });

  it("reads a flag under its other spelling and names it as written", () => {
    const [v] = parseFlags(["--web-enable-lifecycle=false"]).values;
    expect(v).toMatchObject({ raw: "false", origin: "--web-enable-lifecycle" });
    expect(v?.setting.path).toBe("server.enableLifecycle");
  });

  it("hides the word after an unknown flag, which may be its secret value", () => {
    const f = parseFlags(["--api-key", "k-123"]);
    expect(f.problems.map((p) => p.received)).toEqual([undefined, '"***"']);
    expect(JSON.stringify(f.problems)).not.toContain("k-123");
  });
});

describe("helpText", () => {
  const text = helpText();

  it("lists every setting's flag and environment variable", () => {
    for (const s of SETTINGS) {
      expect(text).toContain(s.env);
      if (s.flag) expect(text).toContain(`--${s.flag}`);
    }
    for (const f of ["--config", "--help", "--version", "SANDBOX_EXPORTER_CONFIG"])
      expect(text).toContain(f);
  });

  it("shows defaults, durations the way they are written", () => {
    expect(text).toMatch(/--timeout DURATION +SANDBOX_TIMEOUT .*\[default: 10s\]/);
    expect(text).toMatch(/--page-limit N +SANDBOX_EXPORTER_PAGE_LIMIT .*\[default: 100\]/);
    expect(text).toMatch(/--max-pages N +SANDBOX_EXPORTER_MAX_PAGES .*\[default: 100000\]/);
    // Schedules are parsed values; --help shows them as written.
    expect(text).toMatch(
      /--poll-schedule VALUE +SANDBOX_EXPORTER_POLL_SCHEDULE .*\[default: 15s\]/,
    );
    expect(text).toMatch(
      /--probe-schedule VALUE +SANDBOX_EXPORTER_PROBE_SCHEDULE .*\[default: 60s\]/,
    );
    expect(text).toMatch(/--probe\[=BOOL\] +SANDBOX_EXPORTER_PROBE_ENABLED .*\[default: false\]/);
  });

  it("shows the settings other parts consume, with their defaults and the flag's other spelling", () => {
    expect(text).toMatch(
      /--web\.enable-lifecycle\[=BOOL\] +SANDBOX_EXPORTER_WEB_ENABLE_LIFECYCLE .*\(also --web-enable-lifecycle\) \[default: false\]/,
    );
    expect(text).toMatch(
      /--max-label-value-length N +SANDBOX_EXPORTER_MAX_LABEL_VALUE_LENGTH .*\[default: 1024\]/,
    );
    expect(text).toMatch(
      /--confirm-drop-ratio NUMBER +SANDBOX_EXPORTER_CONFIRM_DROP_RATIO .*\[default: 0\.5\]/,
    );
    expect(text).toMatch(
      /--poll-max-backoff DURATION +SANDBOX_EXPORTER_POLL_MAX_BACKOFF .*\[default: 5m\]/,
    );
  });

  it("offers no flag for the API key", () => {
    expect(text).toMatch(/\(no flag\) +SANDBOX_API_KEY /);
    expect(text).not.toMatch(/--api-key /);
  });
});
