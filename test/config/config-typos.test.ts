// A misspelt key in a real config file on disk: named where it was written, with the known key
// it most likely meant, at any depth.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/catalog.js";
import { ConfigError } from "../../src/config/load.js";
import { closest, editDistance } from "../../src/config/suggest.js";

const dir = mkdtempSync(join(tmpdir(), "config-typos-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The problem lines of loading `yaml` from a real file; the file's path. */
function problems(name: string, yaml: string): { file: string; lines: string[] } {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  try {
    loadConfig({ argv: ["--config", file], env: {}, readFile: (p) => readFileSync(p, "utf8") });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return { file, lines: (err as ConfigError).format().split("\n") };
  }
  throw new Error("expected a ConfigError");
}

const UNKNOWN = "expected a known setting (see --help)";

describe("config-file typos", () => {
  it("suggests the known key for a misspelt nested key", () => {
    const { file, lines } = problems("nested.yaml", "poll:\n  schedul: 30s\n");
    expect(lines).toEqual([
      `poll.schedul (file ${file}:poll.schedul): ${UNKNOWN}; did you mean poll.schedule?`,
    ]);
  });

  it("names the file, not a default, as the source of a misspelt top-level key", () => {
    const { file, lines } = problems("top.yaml", "polll:\n  schedule: 30s\n");
    expect(lines).toEqual([`polll (file ${file}:polll): ${UNKNOWN}; did you mean poll?`]);
  });

  it("suggests at every depth: list items, records and nested sections", () => {
    const yaml = [
      "policy:",
      "  rules:",
      "    - {name: idle, action: log, idelFor: 1h}",
      "  activity:",
      "    usage: {cpuBelowPercnt: 3}",
      "cost:",
      "  prices:",
      "    vcpuSecnd: 0.1",
      "    templates:",
      "      base: {memoryGibSecnd: 0.1}",
      "",
    ].join("\n");
    const { file, lines } = problems("deep.yaml", yaml);
    const hint = (path: string, meant: string) =>
      `${path} (file ${file}:${path}): ${UNKNOWN}; did you mean ${meant}?`;
    expect([...lines].sort()).toEqual(
      [
        hint("policy.rules.0.idelFor", "policy.rules.0.idleFor"),
        hint("policy.activity.usage.cpuBelowPercnt", "policy.activity.usage.cpuBelowPercent"),
        hint("cost.prices.vcpuSecnd", "cost.prices.vcpuSecond"),
        hint(
          "cost.prices.templates.base.memoryGibSecnd",
          "cost.prices.templates.base.memoryGiBSecond",
        ),
      ].sort(),
    );
  });

  it("offers no guess for a key far from every known one, nor a derived fact", () => {
    const yaml = "polling: {}\nprobe: {futureSetting: 1}\nplatform: {envProxi: true}\n";
    const { file, lines } = problems("far.yaml", yaml);
    expect([...lines].sort()).toEqual([
      `platform.envProxi (file ${file}:platform.envProxi): ${UNKNOWN}`,
      `polling (file ${file}:polling): ${UNKNOWN}`,
      `probe.futureSetting (file ${file}:probe.futureSetting): ${UNKNOWN}`,
    ]);
  });
});

describe("closest", () => {
  it("counts a swap of neighbours as one edit", () => {
    expect(editDistance("schedule", "schedlue")).toBe(1);
    expect(editDistance("", "poll")).toBe(4);
  });

  it("takes the fewest edits within the key's tolerance, ignoring case, - and _", () => {
    expect(closest("page_limit", ["maxPages", "pageLimit"])).toBe("pageLimit");
    expect(closest("maxBackoff", ["maxBackoffMs"])).toBe("maxBackoffMs");
    expect(closest("shard", ["shards", "shard2"])).toBe("shards");
    expect(closest("ab", ["abc"])).toBeUndefined();
  });
});
