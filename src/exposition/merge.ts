// Several expositions made one (several teams): each part's samples get the part's label (the
// team), and every family is written once, its HELP and TYPE first, then its samples from every
// part in order. A parser reading families (OpenMetrics, promtool) needs a family's samples
// together; two expositions written one after the other would repeat the family instead.

/** One family of an exposition: its name, header lines and sample lines, each ending in "\n". */
export interface FamilyText {
  readonly name: string;
  readonly head: string;
  readonly samples: string;
}

const OPEN_BRACE = 123;
const SPACE = 32;

/**
 * The families of `text` (Prometheus text or OpenMetrics, without or with `# EOF`, which is left
 * out) with `label` (`name="value"`, escaped) added to every sample that does not carry that label
 * name already; `label` undefined leaves the samples as they are.
 */
export function splitFamilies(text: string, label?: string): FamilyText[] {
  const out: FamilyText[] = [];
  const labelName = label === undefined ? "" : `${label.slice(0, label.indexOf("=") + 1)}"`;
  let name: string | undefined;
  let head = "";
  let samples: string[] = [];
  const close = (): void => {
    if (name !== undefined) out.push({ name, head, samples: samples.join("") });
    name = undefined;
    head = "";
    samples = [];
  };
  // Bounded by the text: each pass consumes one line.
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf("\n", at);
    const end = nl < 0 ? text.length : nl + 1;
    const line = text.slice(at, end);
    at = end;
    if (line.startsWith("#")) {
      const family = headerName(line);
      if (family === undefined) continue;
      if (family !== name) close();
      name = family;
      head += line.endsWith("\n") ? line : `${line}\n`;
      continue;
    }
    if (line.trim() === "") continue;
    if (name === undefined) name = sampleName(line);
    const labelled = label === undefined ? line : withLabel(line, label, labelName);
    samples.push(labelled.endsWith("\n") ? labelled : `${labelled}\n`);
  }
  close();
  return out;
}

/** The family a `# HELP`, `# TYPE` or `# UNIT` line names; undefined for `# EOF` and comments. */
function headerName(line: string): string | undefined {
  const m = /^# (?:HELP|TYPE|UNIT) (\S+)/.exec(line);
  return m?.[1];
}

/** A sample's metric name: up to its labels or its value. */
function sampleName(line: string): string {
  const m = /^[^{\s]+/.exec(line);
  return m?.[0] ?? line;
}

/** `line` with `label` first among its labels, unless it has one named as `label` (`name="`). */
function withLabel(line: string, label: string, labelName: string): string {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === OPEN_BRACE) {
      if (line.startsWith(labelName, i + 1)) return line;
      const empty = line.charCodeAt(i + 1) === 125;
      return `${line.slice(0, i + 1)}${label}${empty ? "" : ","}${line.slice(i + 1)}`;
    }
    if (c === SPACE) return `${line.slice(0, i)}{${label}}${line.slice(i)}`;
  }
  return line;
}

/**
 * One exposition of `parts` (each split by splitFamilies): every family once, in the order first
 * met, its header from the first part that has it, then the samples of each part in order.
 */
export function mergeFamilies(parts: ReadonlyArray<readonly FamilyText[]>): string {
  const merged = new Map<string, { head: string; samples: string[] }>();
  for (const part of parts)
    for (const f of part) {
      const m = merged.get(f.name);
      if (m) m.samples.push(f.samples);
      else merged.set(f.name, { head: f.head, samples: [f.samples] });
    }
  let out = "";
  for (const m of merged.values()) out += m.head + m.samples.join("");
  return out;
}
