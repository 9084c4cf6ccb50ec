// Each default lives in one place: the settings slice of its feature. The rule, checked over the
// source text of src/ with the TypeScript parser:
// - A *default* is the value of a zod `.default()` or `.prefault()` anywhere in a slice's fields
//   (nested sections and list items included), or the right side of `??`/`||` in a slice file
//   (a default filled in code, like the policy's). Checked are numbers >= 1000 (milliseconds,
//   bytes, series caps: specific enough that the same value as a fallback is the same default
//   restated; 0, 2, 10, 100 are everyday counts) and strings that are neither a value of the
//   field's enum nor one lower-case word ("json", "default": words other code uses for itself).
//   A default is *owned* by the slice file whose `.default()`/`.prefault()` or code fallback
//   writes it.
// - A *fallback site* is what code puts in place of a missing value: the right side of `??`,
//   `||`, `??=`, `||=`; the missing branch of a conditional that tests for undefined or null
//   (`x === undefined ? 15_000 : x`, `x != null ? x : 15_000`, `typeof x === "undefined" ? ...`);
//   a parameter's or destructured binding's initializer; an instance class field's initializer
//   (`private max = 262_144`); or the argument of `.default()`/`.prefault()`. Its value is read
//   through literals, products and sums of literals (`256 * 1024`), parentheses, const names
//   (`?? DEFAULT_WINDOW_MS`, imported ones too) and members of const objects and static class
//   fields (`?? LIMITS.maxBody`, `?? Prober.MAX`).
// - A *field property* is an object literal's property named like a leaf of a slice's fields
//   (`autoPauseTimeoutMs`, `timeoutMs`): `{ autoPauseTimeoutMs: 15_000, ...o }` restates that
//   field's default when its value is the default of a field of that name.
// - No fallback site outside the slice files (`*-settings.ts`) may hold a default's value, and no
//   field property there may hold its field's default.
// - In a slice file, a fallback site in code (not a `.default()`) or a field property may hold
//   only defaults that slice file owns: `x ?? 262_144` in probe-settings.ts restates the
//   webhooks' default even though both are slice files.
// Validation bounds (`int(1, 10_000)`), named constants that are not used as a fallback (a static
// class field is one), and unit tables are not fallbacks, so a value may appear there without
// restating a default.
// Not seen: numbers under 1000 (probe.lifecycleRounds 2, platform.retries 2: everyday counts),
// a default in another unit (`15` seconds for 15_000 ms, `256` KiB for 262_144 bytes), values
// computed any other way than above (`2 ** 18`, `x / 2`, calls, templates, element access
// `T["x"]`), a missing value tested by truthiness (`x ? x : 15_000`, `!x ? ...`) or by an `if`
// statement (`if (x === undefined) x = 15_000`), a field property under another name
// (`{ pauseAfter: 15_000 }`) and an assignment `this.max = 262_144` in a constructor.
// Not checked: src/simulator (it plays the platform, whose own values some defaults mirror), and
// the named constants in COINCIDENCES, each a fallback of something that is not a setting and
// happens to share a default's value (a literal is never excused: name the constant).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { SETTINGS, SLICES } from "../../src/catalog.js";

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
  /** A fallback in code, a `.default()`/`.prefault()` argument, or a field property. */
  kind: "code" | "zod" | "property";
  /** The property's name, for a field property. */
  name?: string;
}

/** The source of src/, parsed once: const values by name, and every fallback site. */
function scan(files: readonly string[]): Site[] {
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
        remember(n.name.text, n.initializer);
      // A static class field is a named constant: `Prober.MAX`.
      if (
        ts.isPropertyDeclaration(n) &&
        n.initializer &&
        ts.isClassDeclaration(n.parent) &&
        n.parent.name &&
        n.modifiers?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)
      ) {
        const name = propertyName(n.name);
        if (name !== undefined) remember(`${n.parent.name.text}.${name}`, n.initializer);
      }
    });
  function remember(name: string, e: ts.Expression): void {
    consts.set(name, [...(consts.get(name) ?? []), e]);
    // The members of a const object: `LIMITS.maxBody`.
    let o = e;
    while (ts.isParenthesizedExpression(o) || ts.isAsExpression(o) || ts.isSatisfiesExpression(o))
      o = o.expression;
    if (!ts.isObjectLiteralExpression(o)) return;
    for (const p of o.properties) {
      const key = ts.isPropertyAssignment(p) ? propertyName(p.name) : undefined;
      if (key !== undefined && ts.isPropertyAssignment(p))
        remember(`${name}.${key}`, p.initializer);
    }
  }
  const values = (e: ts.Expression, depth = 0): (number | string)[] => {
    if (depth > 8) return [];
    if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e))
      return values(e.expression, depth + 1);
    if (ts.isNumericLiteral(e)) return [Number(e.text)];
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
    if (ts.isPrefixUnaryExpression(e) && e.operator === ts.SyntaxKind.MinusToken)
      return values(e.operand, depth + 1).flatMap((v) => (typeof v === "number" ? [-v] : []));
    if (ts.isIdentifier(e)) return (consts.get(e.text) ?? []).flatMap((x) => values(x, depth + 1));
    if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression))
      return (consts.get(`${e.expression.text}.${e.name.text}`) ?? []).flatMap((x) =>
        values(x, depth + 1),
      );
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
  for (const sf of parsed) {
    const file = relative(ROOT, sf.fileName);
    const note = (e: ts.Expression, kind: Site["kind"], name?: string) => {
      if (ts.isIdentifier(e) && Object.hasOwn(COINCIDENCES, e.text)) return;
      for (const value of values(e)) {
        const line = sf.getLineAndCharacterOfPosition(e.getStart(sf)).line + 1;
        const text = e.parent.getText(sf).slice(0, 120);
        sites.push({ file, line, text, value, kind, ...(name === undefined ? {} : { name }) });
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
          note(n.right, "code");
      } else if (ts.isConditionalExpression(n)) {
        const missing = missingBranch(n);
        if (missing) note(missing, "code");
      } else if ((ts.isParameter(n) || ts.isBindingElement(n)) && n.initializer) {
        note(n.initializer, "code");
      } else if (
        ts.isPropertyDeclaration(n) &&
        n.initializer &&
        !n.modifiers?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)
      ) {
        note(n.initializer, "code");
      } else if (ts.isPropertyAssignment(n) && ts.isObjectLiteralExpression(n.parent)) {
        const name = propertyName(n.name);
        if (name !== undefined) note(n.initializer, "property", name);
      } else if (
        ts.isCallExpression(n) &&
        ts.isPropertyAccessExpression(n.expression) &&
        ["default", "prefault"].includes(n.expression.name.text) &&
        n.arguments[0] !== undefined
      ) {
        note(n.arguments[0], "zod");
      }
    });
  }
  return sites;
}

function propertyName(name: ts.PropertyName): string | undefined {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name))
    return name.text;
  return undefined;
}

/** The branch of `c ? a : b` taken when a value is missing, if `c` tests for undefined or null. */
function missingBranch(n: ts.ConditionalExpression): ts.Expression | undefined {
  let c = n.condition;
  while (ts.isParenthesizedExpression(c)) c = c.expression;
  if (!ts.isBinaryExpression(c)) return undefined;
  const nothing = (e: ts.Expression): boolean =>
    (ts.isIdentifier(e) && e.text === "undefined") ||
    e.kind === ts.SyntaxKind.NullKeyword ||
    ts.isVoidExpression(e) ||
    (ts.isStringLiteral(e) && e.text === "undefined" && ts.isTypeOfExpression(otherSide(c, e)));
  if (!nothing(c.left) && !nothing(c.right)) return undefined;
  switch (c.operatorToken.kind) {
    case ts.SyntaxKind.EqualsEqualsEqualsToken:
    case ts.SyntaxKind.EqualsEqualsToken:
      return n.whenTrue;
    case ts.SyntaxKind.ExclamationEqualsEqualsToken:
    case ts.SyntaxKind.ExclamationEqualsToken:
      return n.whenFalse;
  }
  return undefined;
}

function otherSide(c: ts.BinaryExpression, e: ts.Expression): ts.Expression {
  return c.left === e ? c.right : c.left;
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
  // Each field's leaf name (`policy.webhook.timeoutMs` -> timeoutMs) and its defaults.
  const byLeaf = new Map<string, Set<unknown>>();
  for (const [value, paths] of defaults)
    for (const path of paths) {
      const leaf = /\.(\w+)$/.exec(path)?.[1];
      if (leaf !== undefined) byLeaf.set(leaf, (byLeaf.get(leaf) ?? new Set()).add(value));
    }
  const files = sourceFiles(SRC).filter((f) => !f.startsWith(join(SRC, "simulator")));
  const sites = scan(files);
  const inSlice = sites.filter((s) => isSliceFile(s.file));
  const outside = sites.filter((s) => !isSliceFile(s.file));
  for (const s of inSlice) if (s.kind === "code") add(defaults, s.value, `${s.file}:${s.line}`);
  // The slice files that write each default, in a `.default()` or in code.
  const owners = new Map<unknown, Set<string>>();
  for (const s of inSlice)
    if (s.kind !== "property" && checked(s.value))
      owners.set(s.value, (owners.get(s.value) ?? new Set<string>()).add(s.file));
  const isFieldDefault = (s: Site): boolean =>
    s.name !== undefined && (byLeaf.get(s.name)?.has(s.value) ?? false);
  const describeSite = (s: Site): string =>
    `${s.file}:${s.line} ${s.text} (the default of ${[...(defaults.get(s.value) ?? [])].join(", ")})`;

  it("finds the defaults it checks (the walk reaches nested sections and slice code)", () => {
    expect(defaults.get(3_600_000)).toContain("poll.teamMetricsWindowMs");
    expect(defaults.get(262_144)).toContain("webhooks.maxBodyBytes");
    expect(defaults.get(4 * 1024 * 1024)).toContain("webhooks.maxInFlightBytes");
    expect(defaults.get("USD")).toContain("cost.currency");
    expect(defaults.get(5_000)).toContain("policy.webhook.timeoutMs");
    expect([...(defaults.get(120_000) ?? [])].join()).toMatch(/policy-settings\.ts/);
    expect(defaults.has("json")).toBe(false); // an enum value
    expect(byLeaf.get("autoPauseTimeoutMs")).toContain(15_000);
    expect([...(owners.get(262_144) ?? [])]).toContain("src/server/webhook-settings.ts");
    // Every checked default has a slice file that writes it, so a restatement in another slice
    // file is told from the owner's own.
    expect([...defaults.keys()].filter((v) => !owners.has(v))).toEqual([]);
  });

  it("no code outside the slices falls back to a default's value", () => {
    const restated = outside
      .filter((s) => (s.kind === "property" ? isFieldDefault(s) : defaults.has(s.value)))
      .map(describeSite);
    expect(restated).toEqual([]);
  });

  it("no slice file falls back to a default another slice file owns", () => {
    const borrowed = inSlice
      .filter((s) => s.kind === "code" || (s.kind === "property" && isFieldDefault(s)))
      .filter((s) => [...(owners.get(s.value) ?? [])].some((f) => f !== s.file))
      .map(describeSite);
    expect(borrowed).toEqual([]);
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
