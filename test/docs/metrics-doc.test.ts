// docs/metrics.md is generated from the code's family descriptors (npm run docs:metrics): the file
// must be what the generator writes now, and the metrics the hand-written docs name must be
// families it lists. Whether the descriptors are true is test/docs/metric-descriptors.test.ts'.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  BEGIN,
  END,
  familyDocs,
  generateMetricsDoc,
  METRICS_DOC,
} from "../../tools/docs-metrics.js";

const ROOT = join(import.meta.dirname, "..", "..");
const DOCS = [
  join(ROOT, "README.md"),
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(ROOT, "docs", f)),
];
/** Identifiers that start like a metric but are labels, query parameters or file names. */
const NOT_METRICS = new Set(["sandbox_id", "sandbox_ids", "process_lost"]);

let current = "";
let generated = "";
beforeAll(() => {
  current = readFileSync(METRICS_DOC, "utf8");
  generated = generateMetricsDoc(current);
});

/** The metric names the generated reference lists. */
function referenceNames(doc: string): Set<string> {
  const part = doc.slice(doc.indexOf(BEGIN), doc.indexOf(END));
  return new Set([...part.matchAll(/^\| `([a-z_:][a-z0-9_:]*)` \|/gm)].map((m) => m[1]!));
}

/** A document without its generated part. */
function handWritten(doc: string): string {
  const begin = doc.indexOf(BEGIN);
  return begin < 0 ? doc : doc.slice(0, begin) + doc.slice(doc.indexOf(END));
}

describe("docs/metrics.md", () => {
  it("is what npm run docs:metrics writes from the code (run it after changing a family)", () => {
    expect(generated).toBe(current);
  });

  it("lists every family the catalog declares, each once", () => {
    const names = familyDocs().map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    expect(referenceNames(generated)).toEqual(new Set(names));
    expect(names.length).toBeGreaterThan(100);
  });

  it("names in the hand-written docs only metrics the reference lists", () => {
    const known = referenceNames(generated);
    const unknown: string[] = [];
    for (const file of DOCS) {
      const text = handWritten(readFileSync(file, "utf8"));
      // A metric name: not part of a recording rule name (`a:b:c`), a placeholder or a path.
      for (const m of text.matchAll(
        /(?<![\w:/.-])((?:sandbox|process)_[a-z0-9_]+)(?![\w<:/.-])/g,
      )) {
        const name = m[1]!;
        if (NOT_METRICS.has(name) || known.has(name)) continue;
        if (known.has(name.replace(/_(bucket|sum|count)$/, ""))) continue;
        unknown.push(`${file.slice(ROOT.length + 1)}: ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
