// The layout issue #30 set: a thin composition root, and files a reader can take in. Counted as
// `wc -l` counts (newlines).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
const SRC = join(ROOT, "src");
const TEST = join(ROOT, "test");
/** The one promtool helper (test/helpers/promtool.ts). */
const PROMTOOL_HELPER = join(TEST, "helpers", "promtool.ts");
/** A string literal naming the promtool binary: "promtool" or a path ending in /promtool. */
const PROMTOOL_LITERAL = /["'`](?:[^"'`\n]*\/)?promtool["'`]/;

function lines(path: string): number {
  return readFileSync(path, "utf8").split("\n").length - 1;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** Each file of `dir` longer than `max` lines, as "path: lines". */
function longer(dir: string, max: number): string[] {
  return sources(dir)
    .filter((path) => lines(path) > max)
    .map((path) => `${relative(ROOT, path)}: ${lines(path)}`);
}

/** The SLOW globs of vitest.config.ts: the integration project's, the unit project's excludes. */
function slowGlobs(): string[] {
  const config = readFileSync(join(ROOT, "vitest.config.ts"), "utf8");
  const list = /const SLOW = \[([^\]]*)\]/.exec(config)?.[1];
  if (list === undefined) throw new Error("vitest.config.ts: no SLOW list");
  return [...list.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
}

/** Whether a path under ROOT matches one SLOW glob ("dir/**" or one file: the forms it uses). */
function isSlow(path: string, globs: readonly string[]): boolean {
  const rel = relative(ROOT, path);
  return globs.some((g) => {
    if (g.endsWith("/**")) return rel.startsWith(g.slice(0, -2));
    if (/[*?{[]/.test(g)) throw new Error(`vitest.config.ts: SLOW glob ${g} not understood here`);
    return rel === g;
  });
}

/** `file` and every .ts module it imports by a relative path, transitively. */
function importClosure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file) || !existsSync(file)) return seen;
  seen.add(file);
  for (const m of readFileSync(file, "utf8").matchAll(
    /(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g,
  ))
    importClosure(resolve(dirname(file), (m[1] as string).replace(/\.js$/, ".ts")), seen);
  return seen;
}

describe("layout", () => {
  it("keeps the composition root under 150 lines", () => {
    expect(lines(join(SRC, "app.ts"))).toBeLessThan(150);
  });

  it("keeps every file under src/ at 400 lines or fewer", () => {
    expect(longer(SRC, 400)).toEqual([]);
  });

  it("keeps every file under src/collect at 300 lines or fewer", () => {
    expect(longer(join(SRC, "collect"), 300)).toEqual([]);
  });

  it("names no setting of a single feature in the composition root", () => {
    const text = readFileSync(join(SRC, "app.ts"), "utf8");
    const sections = [
      "platform",
      "server",
      "poll",
      "metrics",
      "probe",
      "policy",
      "webhooks",
      "cost",
    ];
    const named = sections.filter((s) => new RegExp(`config\\.${s}\\b`).test(text));
    expect(named).toEqual([]);
  });

  it("leaves promtool to the integration project: no unit test reaches the binary", () => {
    const globs = slowGlobs();
    expect(globs).toContain("test/promtool/**");
    const unit = sources(TEST).filter((p) => p.endsWith(".test.ts") && !isSlow(p, globs));
    expect(unit.length).toBeGreaterThan(50);
    const reaching = unit.flatMap((test) =>
      [...importClosure(test)]
        .filter((f) => f !== import.meta.filename) // this guard's own pattern
        .filter((f) => f === PROMTOOL_HELPER || PROMTOOL_LITERAL.test(readFileSync(f, "utf8")))
        .map((f) => `${relative(ROOT, test)} -> ${relative(ROOT, f)}`),
    );
    expect(reaching).toEqual([]);
  });
});
