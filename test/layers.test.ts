// The layers of docs/architecture.md ("Layers"), checked on every import of src/: a module imports
// only from its own layer or the ones below it. `import type` and module augmentation count too.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "..", "src");

/** Test tooling, not the exporter: the fake platform and `npm run demo`. */
const TOOLING = [/^simulator\//, /^demo\.ts$/];

/**
 * The layers, bottom to top; a file's layer is the first whose pattern matches its path under
 * src/. Within the features, the probe's step contract lies below its steps, and they below the
 * rest of the probe (the registry that lists them, the runner that runs them).
 */
const LAYERS: ReadonlyArray<{ name: string; paths: readonly RegExp[] }> = [
  { name: "util", paths: [/^util\//, /^version\.ts$/] },
  { name: "settings machinery", paths: [/^config\//] },
  { name: "exposition and platform clients", paths: [/^exposition\//, /^platform\//] },
  { name: "collectors", paths: [/^collect\//] },
  { name: "metrics", paths: [/^metrics\//] },
  { name: "feature contract", paths: [/^feature\.ts$/] },
  {
    name: "probe step contract",
    paths: [/^probe\/(phase|step|probe-error|abortable|create|terminate|http-settings)\.ts$/],
  },
  { name: "probe steps", paths: [/^probe\/steps\//] },
  {
    name: "features",
    paths: [/^poll\//, /^cost\//, /^policy\//, /^probe\//, /^server\//],
  },
  { name: "catalog", paths: [/^catalog\.ts$/] },
  { name: "composition root", paths: [/^app\.ts$/, /^cli\.ts$/, /^services\.ts$/, /^teams\//] },
];

/** Relative specifiers of `import ... from`, `export ... from`, `import(...)`, `declare module`. */
const SPECIFIER = /(?:\bfrom|\bimport|\bmodule)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** The layer index of a path under src/, or -1 for a file no layer claims. */
function layerOf(rel: string): number {
  return LAYERS.findIndex((l) => l.paths.some((p) => p.test(rel)));
}

/** Every import of the exporter's sources: importer and imported, as paths under src/. */
function imports(): Array<{ from: string; to: string }> {
  const files = sources(SRC)
    .map((path) => relative(SRC, path))
    .filter((rel) => !TOOLING.some((p) => p.test(rel)));
  return files.flatMap((from) =>
    [...readFileSync(join(SRC, from), "utf8").matchAll(SPECIFIER)].map((m) => ({
      from,
      to: relative(
        SRC,
        resolve(dirname(join(SRC, from)), (m[1] as string).replace(/\.js$/, ".ts")),
      ),
    })),
  );
}

describe("layers", () => {
  it("places every source file in a layer", () => {
    const files = sources(SRC)
      .map((path) => relative(SRC, path))
      .filter((rel) => !TOOLING.some((p) => p.test(rel)));
    expect(files.filter((rel) => layerOf(rel) < 0)).toEqual([]);
  });

  it("finds the imports it checks", () => {
    const all = imports();
    // A parser that found nothing would pass the next case vacuously.
    expect(all.length).toBeGreaterThan(500);
    expect(all).toContainEqual({ from: "app.ts", to: "catalog.ts" });
    expect(all).toContainEqual({ from: "collect/poll-settings.ts", to: "config/settings.ts" });
  });

  it("has no import running from a lower layer up", () => {
    const upward = imports()
      .filter(({ from, to }) => layerOf(to) > layerOf(from))
      .map(
        ({ from, to }) =>
          `${from} (${LAYERS[layerOf(from)]?.name}) imports ${to} (${LAYERS[layerOf(to)]?.name})`,
      );
    expect(upward).toEqual([]);
  });

  it("leaves the tooling out but lets nothing of the exporter import it", () => {
    const intoTooling = imports().filter(({ to }) => TOOLING.some((p) => p.test(to)));
    expect(intoTooling).toEqual([]);
  });
});
