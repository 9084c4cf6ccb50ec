import { describe, expect, it } from "vitest";
import { helpText, SETTINGS } from "../../src/catalog.js";
import { parseFlags } from "../../src/config/flags.js";

const raws = (argv: string[]) =>
  Object.fromEntries(parseFlags(argv, SETTINGS).values.map((v) => [v.setting.path, v.raw]));

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
    const f = parseFlags(["--config", "c.yaml", "-h", "--version"], SETTINGS);
    expect(f).toMatchObject({ configFile: "c.yaml", help: true, version: true, problems: [] });
  });

  it("reports every unknown flag, missing value and stray argument, not just the first", () => {
    const f = parseFlags(
      ["--bogus", "-x", "--page-limit", "--listen", ":1", "extra", "--timeout"],
      SETTINGS,
    );
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
    const [v] = parseFlags(["--web-enable-lifecycle=false"], SETTINGS).values;
    expect(v).toMatchObject({ raw: "false", origin: "--web-enable-lifecycle" });
    expect(v?.setting.path).toBe("server.enableLifecycle");
  });

  it("hides the word after an unknown flag, which may be its secret value", () => {
    const f = parseFlags(["--api-key", "k-123"], SETTINGS);
    expect(f.problems.map((p) => p.received)).toEqual([undefined, '"***"']);
    expect(JSON.stringify(f.problems)).not.toContain("k-123");
  });
});

/** The rows of the help: each flag's line and its description lines, the description joined. */
function helpRows(text: string): Array<{ head: string; body: string }> {
  const rows: Array<{ head: string; lines: string[] }> = [];
  for (const line of text.split("\n")) {
    if (/^ {2}\S/.test(line)) rows.push({ head: line, lines: [] });
    else if (/^ {8}\S/.test(line)) rows.at(-1)?.lines.push(line.trim());
  }
  return rows.map((r) => ({ head: r.head, body: r.lines.join(" ") }));
}

const literal = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("helpText", () => {
  const text = helpText();
  const rows = helpRows(text);
  /** The whole row of the flag written as `flag` (with its placeholder): head and description. */
  const row = (flag: string): string => {
    const r = rows.find((x) => x.head.trim().split(/\s+/)[0] === flag);
    if (!r) throw new Error(`no row for ${flag}`);
    return `${r.head.trim()} ${r.body}`;
  };

  it("lists every setting's flag and environment variable", () => {
    for (const s of SETTINGS) {
      expect(text).toContain(s.env);
      if (s.flag) expect(text).toContain(`--${s.flag}`);
    }
    for (const f of ["--config", "--help", "--version", "SANDBOX_EXPORTER_CONFIG"])
      expect(text).toContain(f);
  });

  it("keeps every line within 100 columns", () => {
    const long = text.split("\n").filter((l) => l.length > 100);
    expect(long).toEqual([]);
    expect(rows.length).toBeGreaterThanOrEqual(SETTINGS.length);
  });

  it("separates every flag from its environment variable by whitespace", () => {
    for (const s of SETTINGS) {
      const flag = s.flag ? `--${s.flag}` : "(no flag)";
      // The placeholder follows the flag; then at least two spaces, or a line break, then the env.
      const head = new RegExp(
        `^ {2}${literal(flag)}(?:\\[=BOOL\\]| [A-Z,]+)?(?: {2,}|\\n {8})${literal(s.env)}$`,
        "m",
      );
      expect(text, s.path).toMatch(head);
    }
  });

  it("shows at most one default per row, only in its [default: ...]", () => {
    for (const r of rows) {
      const all = `${r.head} ${r.body}`;
      expect(all.match(/\[default: /g)?.length ?? 0, all).toBeLessThanOrEqual(1);
      expect(all.replace(/\[default: [^\]]*\]/, ""), all).not.toMatch(/\bdefault/i);
    }
  });

  it("shows a flavor's preset beside the base default, and an unset price as unset", () => {
    expect(row("--cost[=BOOL]")).toMatch(/\[default: false; true with --flavor e2b\]$/);
    expect(row("--cost-vcpu-second")).toMatch(/\[default: unset; 0\.000014 with --flavor e2b\]$/);
    expect(row("--cost-memory-gib-second")).toMatch(
      /\[default: unset; 0\.0000045 with --flavor e2b\]$/,
    );
    expect(row("--api-prefix")).toMatch(/\[default: \/sandboxapi\/v1; empty with --flavor e2b\]$/);
    // The flavor's own row names one default, not itself again per flavor.
    expect(row("--flavor")).toMatch(/\[default: sandboxapi\]$/);
    expect(row("--cost-paused-gib-second")).toMatch(/\[default: 0\]$/);
    expect(row("--cost-budget-daily")).not.toContain("[default:");
  });

  it("shows defaults, durations the way they are written", () => {
    expect(row("--timeout")).toMatch(/^--timeout DURATION +SANDBOX_TIMEOUT .*\[default: 10s\]$/);
    expect(row("--page-limit")).toMatch(/SANDBOX_EXPORTER_PAGE_LIMIT .*\[default: 100\]$/);
    expect(row("--max-pages")).toMatch(/SANDBOX_EXPORTER_MAX_PAGES .*\[default: 100000\]$/);
    // Schedules are parsed values; --help shows them as written.
    expect(row("--poll-schedule")).toMatch(/\[default: 15s\]$/);
    expect(row("--probe-schedule")).toMatch(/\[default: 60s\]$/);
    expect(row("--probe[=BOOL]")).toMatch(/SANDBOX_EXPORTER_PROBE_ENABLED .*\[default: false\]$/);
    // A default computed from other settings, in the row's own words.
    expect(row("--poll-max-walk")).toMatch(/\[default: 4 poll intervals\]$/);
  });

  it("shows the settings other parts consume, with their defaults and the flag's other spelling", () => {
    expect(row("--web.enable-lifecycle[=BOOL]")).toMatch(
      /SANDBOX_EXPORTER_WEB_ENABLE_LIFECYCLE .*\(also --web-enable-lifecycle\) \[default: false\]$/,
    );
    expect(row("--max-label-value-length")).toMatch(/\[default: 1024\]$/);
    expect(row("--confirm-drop-ratio")).toMatch(/\[default: 0\.5\]$/);
    expect(row("--poll-max-backoff")).toMatch(/\[default: 5m\]$/);
  });

  it("offers no flag for the API key", () => {
    expect(text).toMatch(/^ {2}\(no flag\) +SANDBOX_API_KEY$/m);
    expect(text).not.toMatch(/--api-key /);
  });
});
