// Each default lives in one place: the settings slice of its feature. The rule, checked over the
// source text of src/ with the TypeScript parser:
// - A *default* is the value of a zod `.default()` or `.prefault()` anywhere in a slice's fields
//   (nested sections and list items included), or the right side of `??`/`||` in a slice file
//   (a default filled in code, like the policy's). Checked are numbers >= 1000 (milliseconds,
//   bytes, series caps: specific enough that the same value as a fallback is the same default
//   restated; 0, 2, 10, 100 are everyday counts) and strings that are neither a value of the
//   field's enum nor one lower-case word ("json", "default": words other code uses for itself).
// - A *fallback site* is what code puts in place of a missing value: the right side of `??`,
//   `||`, `??=`, `||=`, a parameter's or destructured binding's initializer, or the argument of
//   `.default()`/`.prefault()`. Its value is read through literals, products and sums of literals
//   (`256 * 1024`), parentheses, and const names (`?? DEFAULT_WINDOW_MS`, imported ones too).
// - No fallback site outside the slice files (`*-settings.ts`) may hold a default's value.
// Validation bounds (`int(1, 10_000)`), named constants that are not used as a fallback, and
// unit tables are not fallbacks, so a value may appear there without restating a default.
// Not checked: src/simulator (it plays the platform, whose own values some defaults mirror), and
// the named constants in COINCIDENCES, each a fallback of something that is not a setting and
// happens to share a default's value (a literal is never excused: name the constant).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { SLICES } from "../../src/config/schema.js";
import { SETTINGS } from "../../src/config/settings.js";

const ROOT = join(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");

/** Constants used as a fallback for something other than a setting, with the same value as one. */
const COINCIDENCES: Readonly<Record<string, string>> = {
  MAX_KILLS: "lifecycle-events: kills remembered, not poll.maxPages",
  BACKOFF_CAP_MS: "the control client's retry backoff cap, not platform.timeoutMs",
  ON_DEMAND_MIN_INTERVAL_MS: "least time between on-demand probes, not a setting",
};

/** Files that declare settings slices: the one place defaults may be written. */
function isSliceFile(file: string): boolean {
  return /-settings\.ts$/.test(file);
}

interface Def {
  type: string;
  innerType?: unknown;
  defaultValue?: unknown;
  shape?: Record<string, unknown>;
  element?: unknown;
  valueType?: unknown;
  options?: readonly unknown[];
  in?: unknown;
  out?: unknown;
  entries?: Record<string, unknown>;
}

const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** Every `.default()`/`.prefault()` value below a zod schema, with its path; enum values skipped. */
function zodDefaults(schema: unknown, path: string, out: Map<unknown, Set<string>>): void {
  const def = defOf(schema);
  switch (def.type) {
    case "default":
    case "prefault": {
      const inner = defOf(def.innerType);
      if (inner.type !== "enum") add(out, def.defaultValue, path);
      zodDefaults(def.innerType, path, out);
      return;
    }
    case "optional":
    case "nullable":
      zodDefaults(def.innerType, path, out);
      return;
    case "object":
      for (const [k, v] of Object.entries(def.shape ?? {})) zodDefaults(v, `${path}.${k}`, out);
      return;
    case "array":
      zodDefaults(def.element, `${path}[]`, out);
      return;
    case "record":
      zodDefaults(def.valueType, `${path}.*`, out);
      return;
    case "union":
      for (const o of def.options ?? []) zodDefaults(o, path, out);
      return;
    case "pipe":
      zodDefaults(def.in, path, out);
      zodDefaults(def.out, path, out);
      return;
  }
}

function add(out: Map<unknown, Set<string>>, value: unknown, where: string): void {
  if (!checked(value)) return;
  const set = out.get(value) ?? new Set<string>();
  set.add(where);
  out.set(value, set);
}

/** The values the rule checks (see the top of the file). */
function checked(value: unknown): value is number | string {
  if (typeof value === "number") return Math.abs(value) >= 1000;
  return typeof value === "string" && value !== "" && !/^[a-z]+$/.test(value);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith(".ts") ? [p] : [];
  });
}

interface Site {
  file: string;
  line: number;
  text: string;
  value: number | string;
}

/** The source of src/, parsed once: const values by name, and every fallback site. */
function scan(files: readonly string[]): { sites: Site[]; sliceFallbacks: Site[] } {
  const parsed = files.map((f) =>
    ts.createSourceFile(f, readFileSync(f, "utf8"), ts.ScriptTarget.Latest, true),
  );
  // const NAME = <expr>, from every file: an imported name resolves to its exported value.
  const consts = new Map<string, ts.Expression[]>();
  for (const sf of parsed)
    visit(sf, (n) => {
      if (
        ts.isVariableDeclaration(n) &&
        ts.isIdentifier(n.name) &&
        n.initializer &&
        ts.isVariableDeclarationList(n.parent) &&
        (n.parent.flags & ts.NodeFlags.Const) !== 0
      )
        consts.set(n.name.text, [...(consts.get(n.name.text) ?? []), n.initializer]);
    });
  const values = (e: ts.Expression, depth = 0): (number | string)[] => {
    if (depth > 8) return [];
    if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e))
      return values(e.expression, depth + 1);
    if (ts.isNumericLiteral(e)) return [Number(e.text)];
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
    if (ts.isPrefixUnaryExpression(e) && e.operator === ts.SyntaxKind.MinusToken)
      return values(e.operand, depth + 1).flatMap((v) => (typeof v === "number" ? [-v] : []));
    if (ts.isIdentifier(e)) return (consts.get(e.text) ?? []).flatMap((x) => values(x, depth + 1));
    if (ts.isBinaryExpression(e)) {
      const op = e.operatorToken.kind;
      if (op === ts.SyntaxKind.AsteriskToken || op === ts.SyntaxKind.PlusToken) {
        const [a] = values(e.left, depth + 1);
        const [b] = values(e.right, depth + 1);
        if (typeof a !== "number" || typeof b !== "number") return [];
        return [op === ts.SyntaxKind.AsteriskToken ? a * b : a + b];
      }
    }
    return [];
  };
  const sites: Site[] = [];
  const sliceFallbacks: Site[] = [];
  for (const sf of parsed) {
    const file = relative(ROOT, sf.fileName);
    const inSlice = isSliceFile(file);
    const note = (e: ts.Expression, code: boolean) => {
      if (ts.isIdentifier(e) && Object.hasOwn(COINCIDENCES, e.text)) return;
      for (const value of values(e)) {
        const line = sf.getLineAndCharacterOfPosition(e.getStart(sf)).line + 1;
        const site = { file, line, text: e.parent.getText(sf).slice(0, 120), value };
        if (!inSlice) sites.push(site);
        else if (code) sliceFallbacks.push(site);
      }
    };
    visit(sf, (n) => {
      if (ts.isBinaryExpression(n)) {
        const op = n.operatorToken.kind;
        if (
          op === ts.SyntaxKind.QuestionQuestionToken ||
          op === ts.SyntaxKind.BarBarToken ||
          op === ts.SyntaxKind.QuestionQuestionEqualsToken ||
          op === ts.SyntaxKind.BarBarEqualsToken
        )
          note(n.right, true);
      } else if ((ts.isParameter(n) || ts.isBindingElement(n)) && n.initializer) {
        note(n.initializer, true);
      } else if (
        ts.isCallExpression(n) &&
        ts.isPropertyAccessExpression(n.expression) &&
        ["default", "prefault"].includes(n.expression.name.text) &&
        n.arguments[0] !== undefined
      ) {
        note(n.arguments[0], false);
      }
    });
  }
  return { sites, sliceFallbacks };
}

function visit(node: ts.Node, f: (n: ts.Node) => void): void {
  f(node);
  node.forEachChild((c) => visit(c, f));
}

describe("each default lives once, in its feature's settings slice", () => {
  const defaults = new Map<unknown, Set<string>>();
  for (const s of SLICES)
    for (const [field, schema] of Object.entries(s.fields))
      zodDefaults(schema, `${s.key}.${field}`, defaults);
  const files = sourceFiles(SRC).filter((f) => !f.startsWith(join(SRC, "simulator")));
  const { sites, sliceFallbacks } = scan(files);
  for (const s of sliceFallbacks) add(defaults, s.value, `${s.file}:${s.line}`);

  it("finds the defaults it checks (the walk reaches nested sections and slice code)", () => {
    expect(defaults.get(3_600_000)).toContain("poll.teamMetricsWindowMs");
    expect(defaults.get(262_144)).toContain("webhooks.maxBodyBytes");
    expect(defaults.get(4 * 1024 * 1024)).toContain("webhooks.maxInFlightBytes");
    expect(defaults.get("USD")).toContain("cost.currency");
    expect(defaults.get(5_000)).toContain("policy.webhook.timeoutMs");
    expect([...(defaults.get(120_000) ?? [])].join()).toMatch(/policy-settings\.ts/);
    expect(defaults.has("json")).toBe(false); // an enum value
  });

  it("no code outside the slices falls back to a default's value", () => {
    const restated = sites
      .filter((s) => defaults.has(s.value))
      .map(
        (s) =>
          `${s.file}:${s.line} ${s.text} (the default of ${[...(defaults.get(s.value) ?? [])].join(", ")})`,
      );
    expect(restated).toEqual([]);
  });
});

describe("each setting has one slice", () => {
  it("lists every row of SETTINGS in exactly one slice, in the slices' order", () => {
    expect(SETTINGS).toEqual(SLICES.flatMap((s) => s.settings));
    const owners = new Map<string, string[]>();
    for (const s of SLICES)
      for (const row of s.settings) owners.set(row.path, [...(owners.get(row.path) ?? []), s.key]);
    const twice = [...owners].filter(([, keys]) => keys.length !== 1);
    expect(twice).toEqual([]);
    expect(owners.size).toBe(SETTINGS.length);
  });

  it("declares each row's field in the row's own slice, and each field in one slice", () => {
    const declared = new Map<string, number>();
    for (const s of SLICES) {
      for (const field of Object.keys(s.fields))
        declared.set(`${s.key}.${field}`, (declared.get(`${s.key}.${field}`) ?? 0) + 1);
      for (const row of s.settings) {
        const [key, field] = row.path.split(".");
        expect({ path: row.path, key, own: Object.hasOwn(s.fields, field ?? "") }).toEqual({
          path: row.path,
          key: s.key,
          own: true,
        });
      }
    }
    expect([...declared].filter(([, n]) => n !== 1)).toEqual([]);
  });
});
