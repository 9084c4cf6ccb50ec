// The layout issue #30 set: a thin composition root, and files a reader can take in. Counted as
// `wc -l` counts (newlines).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
const SRC = join(ROOT, "src");

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
});
