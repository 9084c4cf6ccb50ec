import { describe, expect, it } from "vitest";
import { helpText, loadConfig } from "../../src/catalog.js";
import { ConfigError } from "../../src/config/errors.js";
import { E2B_PRICES, MAX_PRICE } from "../../src/cost/cost-settings.js";
import { yamlProblems } from "../helpers/config-file.js";

const load = (argv: string[], env: Record<string, string> = {}) =>
  loadConfig({ argv: ["--api-url", "http://127.0.0.1:1", ...argv], env }).config;

function problems(argv: string[], env: Record<string, string> = {}): string {
  try {
    load(argv, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return "";
}

describe("cost settings", () => {
  it("are on with E2B's published rates for --flavor e2b", () => {
    const c = load(["--flavor", "e2b"]).cost;
    expect(c.enabled).toBe(true);
    expect(c.prices).toMatchObject(E2B_PRICES);
    expect(c.prices).toMatchObject({ vcpuSecond: 0.000014, memoryGiBSecond: 0.0000045 });
    expect(c.currency).toBe("USD");
  });

  it("are off for a self-hosted platform until prices are given", () => {
    expect(load([]).cost.enabled).toBe(false);
    const c = load(["--cost-vcpu-second", "0.00002", "--cost-memory-gib-second", "0.000001"]).cost;
    expect(c).toMatchObject({ enabled: true, prices: { vcpuSecond: 0.00002, pausedGiBSecond: 0 } });
  });

  it("refuse --cost on a self-hosted platform without prices, naming the setting", () => {
    expect(problems(["--cost"])).toContain("cost.prices.vcpuSecond");
  });

  it("refuse a negative or non-numeric price at start, naming the setting", () => {
    expect(problems(["--flavor", "e2b", "--cost-vcpu-second=-0.1"])).toMatch(
      /cost\.prices\.vcpuSecond.*price/s,
    );
    expect(problems([], { SANDBOX_EXPORTER_COST_MEMORY_GIB_SECOND: "cheap" })).toMatch(
      /cost\.prices\.memoryGiBSecond.*price/s,
    );
  });

  it("turn off with --no-cost and take --cost-attribute-by more than once", () => {
    expect(load(["--flavor", "e2b", "--no-cost"]).cost.enabled).toBe(false);
    const c = load([
      "--flavor",
      "e2b",
      "--cost-attribute-by",
      "customer",
      "--cost-attribute-by",
      "user",
    ]);
    expect(c.cost.attributeBy).toEqual(["customer", "user"]);
    expect(helpText()).toContain("--cost[=BOOL]");
    expect(helpText()).toContain("(also --no-cost)");
  });

  it("refuse a price no platform charges, which would overflow spend to Infinity (old: 1e300 accepted)", () => {
    for (const huge of ["1e300", "1e307", String(MAX_PRICE * 1.001)])
      expect(problems(["--flavor", "e2b", `--cost-vcpu-second=${huge}`])).toMatch(
        /cost\.prices\.vcpuSecond \(flag --cost-vcpu-second\): expected a price: a number from 0 to 1000/,
      );
    expect(problems([], { SANDBOX_EXPORTER_COST_MEMORY_GIB_SECOND: "1e307" })).toContain(
      "cost.prices.memoryGiBSecond",
    );
    const lines = yamlProblems(
      "cost:\n  prices:\n    pausedGiBSecond: 1e300\n    templates:\n      big: { vcpuSecond: 5000 }\n",
    );
    expect(lines.join("\n")).toContain("cost.prices.pausedGiBSecond");
    expect(lines.join("\n")).toContain("cost.prices.templates.big.vcpuSecond");
    expect(
      load(["--flavor", "e2b", `--cost-vcpu-second=${MAX_PRICE}`]).cost.prices.vcpuSecond,
    ).toBe(MAX_PRICE);
  });

  it("refuse a metadata key given twice to cost.attributeBy, by flag or in the file (old: its spend counted twice)", () => {
    expect(
      problems(["--flavor", "e2b", "--cost-attribute-by", "team", "--cost-attribute-by", "team"]),
    ).toMatch(
      /cost\.attributeBy \(flag --cost-attribute-by\): expected distinct metadata keys \("team" is given twice/,
    );
    expect(problems(["--flavor", "e2b", "--cost-attribute-by", "team,user,team"])).toContain(
      '"team" is given twice',
    );
    const lines = yamlProblems("cost:\n  attributeBy: [owner, owner]\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cost\.attributeBy \(file c\.yaml.*"owner" is given twice/);
  });
});
