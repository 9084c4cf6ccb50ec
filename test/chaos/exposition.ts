// Reading an exposition body the way a scraper does: samples with unescaped labels, and the
// per-sandbox lines two exporters must agree on (promtool: test/helpers/promtool.ts).
/** One sample line, its labels unescaped. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: string;
  line: string;
}

/** The sample lines of a text-format body; throws on a line a scraper could not read. */
export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
    if (!name) throw new Error(`not a sample line: ${line.slice(0, 200)}`);
    const labels: Record<string, string> = {};
    let i = name.length;
    if (line[i] === "{") {
      i++;
      while (line[i] !== "}") {
        const eq = line.indexOf("=", i);
        const key = line.slice(i, eq);
        if (line[eq + 1] !== '"') throw new Error(`unquoted label value: ${line.slice(0, 200)}`);
        let j = eq + 2;
        let value = "";
        for (; j < line.length && line[j] !== '"'; j++) {
          if (line[j] === "\\") {
            j++;
            value += line[j] === "n" ? "\n" : line[j];
          } else value += line[j];
        }
        if (j >= line.length) throw new Error(`unterminated label value: ${line.slice(0, 200)}`);
        labels[key] = value;
        i = j + 1;
        if (line[i] === ",") i++;
      }
      i++;
    }
    if (line[i] !== " ") throw new Error(`no value after labels: ${line.slice(0, 200)}`);
    out.push({ name, labels, value: line.slice(i + 1).split(" ")[0] as string, line });
  }
  return out;
}

/** The per-sandbox families (`<ns>_sandbox_*`, not the `_sandboxes` aggregates). */
export function perSandboxLines(text: string, ns = "sandbox"): Set<string> {
  const prefix = `${ns}_sandbox_`;
  return new Set(
    text.split("\n").filter((l) => l.startsWith(prefix) && !l.startsWith(`${ns}_sandbox_series`)),
  );
}

/** Aggregate lines (`<ns>_sandboxes*`) whose group is not empty: a fresh exporter has the same. */
export function liveAggregateLines(text: string, ns = "sandbox"): Set<string> {
  const samples = parseSamples(
    text
      .split("\n")
      .filter((l) => l.startsWith(`${ns}_sandboxes`))
      .join("\n"),
  );
  const key = (s: Sample) => `${s.labels.state}\u0000${s.labels.template}`;
  const live = new Set(
    samples.filter((s) => s.name === `${ns}_sandboxes` && s.value !== "0").map(key),
  );
  return new Set(
    samples
      .filter(
        (s) =>
          live.has(key(s)) &&
          !s.name.endsWith("_created_total") &&
          !s.name.endsWith("_disappeared_total"),
      )
      .map((s) => s.line),
  );
}

/** Lines of `a` missing from `b` and of `b` missing from `a`, the first few of each. */
export function setDiff(a: Set<string>, b: Set<string>, shown = 5): string {
  const onlyA = [...a].filter((x) => !b.has(x));
  const onlyB = [...b].filter((x) => !a.has(x));
  if (onlyA.length === 0 && onlyB.length === 0) return "";
  const cut = (xs: string[]) => xs.slice(0, shown).map((x) => `  ${x.slice(0, 300)}`);
  return [
    `${onlyA.length} only in the first:`,
    ...cut(onlyA),
    `${onlyB.length} only in the second:`,
    ...cut(onlyB),
  ].join("\n");
}
