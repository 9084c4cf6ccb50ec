// Reads the families of a Prometheus text exposition as the metric survey needs them: HELP, TYPE
// and the label names of their samples (test/helpers/metric-usage.ts reads sample names instead).

/** One family of an exposition (or of a registry). */
export interface Seen {
  name: string;
  type: string;
  help: string;
  labels: string[];
  /** Its label names are known: it had a series, or prom-client declares them. */
  labelsKnown: boolean;
}

/** Families of a Prometheus text exposition: HELP, TYPE and the label names of their samples. */
export function parseExposition(text: string): Map<string, Seen> {
  const out = new Map<string, Seen>();
  let current: Seen | undefined;
  for (const line of text.split("\n")) {
    const help = /^# HELP (\S+) ?(.*)$/.exec(line);
    if (help) {
      current = {
        name: help[1]!,
        type: "untyped",
        help: unescapeHelp(help[2]!),
        labels: [],
        labelsKnown: false,
      };
      out.set(current.name, current);
      continue;
    }
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type && current && current.name === type[1]) {
      current.type = type[2]!;
      continue;
    }
    if (line === "" || line.startsWith("#") || !current) continue;
    current.labelsKnown = true;
    const open = line.indexOf("{");
    if (open < 0 || open > line.indexOf(" ")) continue;
    for (const l of labelNames(line, open))
      if (l !== "le" && l !== "quantile" && !current.labels.includes(l)) current.labels.push(l);
  }
  return out;
}

function unescapeHelp(help: string): string {
  return help.replace(/\\(n|\\)/g, (_m, c: string) => (c === "n" ? "\n" : "\\"));
}

/** Label names of the `{...}` at `open`, skipping over quoted values. */
function labelNames(line: string, open: number): string[] {
  const out: string[] = [];
  let i = open + 1;
  while (i < line.length && line[i] !== "}") {
    const eq = line.indexOf("=", i);
    out.push(line.slice(i, eq).trim());
    i = eq + 2;
    while (i < line.length && line[i] !== '"') i += line[i] === "\\" ? 2 : 1;
    i++;
    if (line[i] === ",") i++;
  }
  return out;
}
