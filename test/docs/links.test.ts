// Every relative link of README.md and docs/*.md reaches a file of the repository, and every
// #anchor a heading of its target (GitHub's heading ids).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const DOCS = [
  join(ROOT, "README.md"),
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(ROOT, "docs", f)),
];

/** Markdown outside fenced code blocks and inline code spans. */
function prose(text: string): string {
  return text
    .replace(/^```[\s\S]*?^```/gm, "")
    .split("\n")
    .map((line) => line.replace(/`[^`]*`/g, ""))
    .join("\n");
}

/** The targets of `[text](target)` links. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

/** GitHub's id of a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingId(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The ids of a document's headings, repeated ones numbered as GitHub does (`-1`, `-2`). */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const id = headingId(m[1]!);
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    out.add(n === 0 ? id : `${id}-${n}`);
  }
  return out;
}

/** What is wrong with each relative link of `file` (external ones are not followed). */
function brokenLinks(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const target of linkTargets(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#");
    const to = path === "" ? file : join(dirname(file), decodeURIComponent(path));
    const where = `${relative(ROOT, file)}: (${target})`;
    if (!to.startsWith(ROOT) || !existsSync(to)) {
      out.push(`${where} names no file of the repository`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!to.endsWith(".md") || statSync(to).isDirectory()) {
      out.push(`${where} has an anchor into a file that is not Markdown`);
      continue;
    }
    if (!anchors(readFileSync(to, "utf8")).has(anchor))
      out.push(`${where} names no heading of ${relative(ROOT, to)}`);
  }
  return out;
}

describe("links of the docs", () => {
  it("computes heading ids as GitHub does", () => {
    expect(headingId("Why did my sandbox end?")).toBe("why-did-my-sandbox-end");
    expect(headingId("On demand: `GET /probe?module=NAME`")).toBe("on-demand-get-probemodulename");
    expect(headingId("Lifecycle step (pause/resume round trip)")).toBe(
      "lifecycle-step-pauseresume-round-trip",
    );
    expect([...anchors("# A\n## A\n```\n# not a heading\n```\n")]).toEqual(["a", "a-1"]);
    expect(linkTargets("[x](a.md#b) `[y](not.md)` [z](https://e.org)")).toEqual([
      "a.md#b",
      "https://e.org",
    ]);
  });

  it("has docs to check, each with links", () => {
    expect(DOCS.length).toBeGreaterThanOrEqual(9);
    for (const file of DOCS)
      expect(linkTargets(readFileSync(file, "utf8")).length).toBeGreaterThan(0);
  });

  it.each(DOCS.map((f) => [relative(ROOT, f), f]))(
    "%s: every relative link resolves",
    (_, file) => {
      expect(brokenLinks(file)).toEqual([]);
    },
  );
});
