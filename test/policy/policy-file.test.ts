import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/catalog.js";
import { loadPolicySpec, PolicyFileError, parsePolicyFile } from "../../src/policy/policy-file.js";
import { policySpec } from "../../src/policy/policy-settings.js";

const files = (text: string) => (p: string) => {
  if (p !== "rules.yaml") throw new Error(`ENOENT: no such file '${p}'`);
  return text;
};

function problems(text: string): string {
  try {
    parsePolicyFile("rules.yaml", files(text));
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyFileError);
    return (err as Error).message;
  }
  throw new Error("the file was accepted");
}

describe("policy rule file", () => {
  it("names the rule and the field of each problem", () => {
    const msg = problems(`
rules:
  - name: ok
    idleFor: 30m
    action: pause
  - name: idle-ci
    idleFor: 3x
    action: pause
    match: { metadata: ["team in ()"], colour: red }
`);
    expect(msg).toContain('rules[1] "idle-ci".idleFor: expected a duration like 30s');
    expect(msg).toContain('rules[1] "idle-ci".match.metadata[0]: expected a selector');
    expect(msg).toContain('rules[1] "idle-ci".match: expected known keys, not colour');
    expect(msg).not.toContain('"ok"');
  });

  it("refuses delete without allowDelete, and pause or delete without a condition", () => {
    expect(problems("rules:\n  - { name: d, action: delete, maxAge: 1d }")).toContain(
      'rules[0] "d".allowDelete: expected allowDelete: true',
    );
    expect(problems("rules:\n  - { name: p, action: pause }")).toContain(
      'rules[0] "p".idleFor: expected idleFor or maxAge',
    );
    expect(
      problems("rules:\n  - { name: a, action: log }\n  - { name: a, action: log }"),
    ).toContain('rules[1] "a".name: expected a unique rule name');
  });

  it("reports YAML syntax errors with the line and an unreadable file", () => {
    expect(problems("rules: [\n  - name: x")).toMatch(/line \d+, column \d+/);
    expect(() => parsePolicyFile("missing.yaml", files(""))).toThrow(/missing.yaml: not readable/);
  });

  it.each([
    ["empty", ""],
    ["blank", "\n \n"],
    ["only comments", "# rules:\n#   - name: x\n"],
    ["only null", "null\n"],
  ])("refuses a rule file that is %s, as it would silently run no rules", (_name, text) => {
    expect(problems(text)).toBe(
      "policy file rules.yaml: (top level): expected a mapping of policy settings (rules, dryRun, ...), got an empty file",
    );
  });

  it("refuses a list at the top level", () => {
    expect(problems("- name: x\n  action: log\n")).toBe(
      "policy file rules.yaml: (top level): expected a mapping of policy settings (rules, dryRun, ...), got a list",
    );
  });

  it("refuses an alias bomb with a PolicyFileError naming the file, not a crash", () => {
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (let i = 1; i < 9; i++) {
      const [name, prev] = [`l${i}`, i === 1 ? "a" : `l${i - 1}`];
      levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`);
    }
    expect(problems(levels.join("\n"))).toMatch(/^policy file rules\.yaml: .*alias/);
  });

  it("refuses an alias to its own anchor, a repeated key and nesting too deep", () => {
    expect(problems("rules: &r [*r]\n")).toBe(
      "policy file rules.yaml: line 1, column 12: alias *r refers to itself",
    );
    expect(problems("dryRun: true\ndryRun: false\n")).toBe(
      'policy file rules.yaml: line 2, column 1: Map keys must be unique: "dryRun" repeats',
    );
    expect(problems(`rules: ${"[".repeat(10_000)}`)).toMatch(
      /^policy file rules\.yaml: line 1, column \d+: nested deeper than 64 levels$/,
    );
  });

  it("merges the file over the config section and fills the defaults", () => {
    const { config } = loadConfig({
      argv: ["--policy", "rules.yaml", "--policy-dry-run=false"],
      env: {},
    });
    expect(config.policy.enabled).toBe(true);
    const spec = loadPolicySpec(
      config.policy,
      files("consecutiveCycles: 3\nrules:\n  - { name: l, action: log }"),
    );
    expect(spec).toMatchObject({
      dryRun: false,
      consecutiveCycles: 3,
      maxActionsPerCycle: 10,
      maxMatchPercent: 50,
      protectLabel: { key: "sandbox-exporter/protect", value: "true" },
      activity: { logDirection: "backward", concurrency: 8 },
    });
    expect(spec.rules[0]).toMatchObject({ name: "l", action: "log", cooldown: 3_600_000 });
    expect(loadConfig({ argv: [], env: {} }).config.policy.enabled).toBe(false);
  });
});

describe("the policy spec", () => {
  it("settles each rule's dryRun once: its own when set, else the global one", () => {
    const text = [
      "dryRun: false",
      "rules:",
      "  - {name: own-dry, action: pause, idleFor: 30m, dryRun: true}",
      "  - {name: inherits, action: pause, idleFor: 30m}",
    ].join("\n");
    const file = parsePolicyFile("rules.yaml", () => text);
    const spec = policySpec(loadConfig({ argv: [], env: {} }).config.policy, file);
    expect(spec.rules.map((r) => [r.name, r.dryRun])).toEqual([
      ["own-dry", true],
      ["inherits", false],
    ]);
    const defaults = policySpec(loadConfig({ argv: [], env: {} }).config.policy, {
      rules: file.rules ?? [],
    });
    expect(defaults.rules.map((r) => r.dryRun)).toEqual([true, true]);
  });
});
