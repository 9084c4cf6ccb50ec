// Writing the Prometheus text / OpenMetrics exposition by hand, for families rendered once per snapshot.

/** Exposition formats. */
export type Format = "prometheus" | "openmetrics";

/** Escapes a label value (backslash, double quote, newline). */
export function escapeLabel(value: string): string {
  return /[\\"\n]/.test(value)
    ? value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")
    : value;
}

/** Formats a sample value the way Prometheus parses it. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(v);
}

/** `{a="x",b="y"}` for ordered label pairs; "" when there are none. */
export function labels(pairs: ReadonlyArray<readonly [string, string]>): string {
  if (pairs.length === 0) return "";
  let out = "{";
  for (let i = 0; i < pairs.length; i++) {
    const [k, v] = pairs[i] as readonly [string, string];
    out += `${i ? "," : ""}${k}="${escapeLabel(v)}"`;
  }
  return `${out}}`;
}

/** One metric family being written: header once, then samples. */
export class Family {
  private readonly lines: string[] = [];
  constructor(
    readonly name: string,
    readonly type: "gauge" | "counter",
    readonly help: string,
  ) {}

  /** Adds a sample; counters get `_total` appended to the family name. */
  add(labelText: string, value: number): this {
    const sample = this.type === "counter" ? `${this.name}_total` : this.name;
    this.lines.push(`${sample}${labelText} ${formatValue(value)}`);
    return this;
  }

  get size(): number {
    return this.lines.length;
  }

  /** The family's text in `format`, or "" when it has no samples. */
  render(format: Format): string {
    if (this.lines.length === 0) return "";
    const help = this.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
    const head =
      format === "openmetrics"
        ? `# HELP ${this.name} ${help}\n# TYPE ${this.name} ${this.type}\n`
        : `# HELP ${this.type === "counter" ? `${this.name}_total` : this.name} ${help}\n# TYPE ${this.type === "counter" ? `${this.name}_total` : this.name} ${this.type}\n`;
    return `${head}${this.lines.join("\n")}\n`;
  }
}
