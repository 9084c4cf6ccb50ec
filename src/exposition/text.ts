// Writing the Prometheus text 0.0.4 / OpenMetrics 1.0.0 exposition by hand, for families rendered
// once per snapshot. Gauge families are byte-identical in both formats; counters differ.

import type { ValueGuard } from "./value-guard.js";

/** Exposition formats. */
export type Format = "prometheus" | "openmetrics";

/** Escapes a label value (backslash, double quote, newline), the same in both formats. */
export function escapeLabel(value: string): string {
  return /[\\"\n]/.test(value)
    ? value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")
    : value;
}

/**
 * HELP text safe in both formats: backslash and newline escaped, double quotes (which only
 * OpenMetrics may escape) replaced, so a gauge family renders identically in both.
 */
export function escapeHelp(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "'");
}

/** Formats a sample value the way Prometheus parses it: integers never in exponent form. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  if (Number.isInteger(v) && Math.abs(v) >= 1e21) return BigInt(v).toString();
  return String(v);
}

/** `{a="x",b="y"}` for ordered label pairs ("" when there are none), values cut by `guard`. */
export function labels(
  pairs: ReadonlyArray<readonly [string, string]>,
  guard?: ValueGuard,
): string {
  if (pairs.length === 0) return "";
  let out = "{";
  for (let i = 0; i < pairs.length; i++) {
    const [k, v] = pairs[i] as readonly [string, string];
    out += `${i ? "," : ""}${k}="${escapeLabel(guard ? guard.label(v) : v)}"`;
  }
  return `${out}}`;
}

/** The HELP and TYPE lines of a family; counters are named without `_total` in OpenMetrics only. */
export function header(
  name: string,
  type: "gauge" | "counter" | "histogram",
  help: string,
  format: Format,
): string {
  const shown = type === "counter" && format === "prometheus" ? `${name}_total` : name;
  return `# HELP ${shown} ${escapeHelp(help)}\n# TYPE ${shown} ${type}\n`;
}

/** One metric family being written: header once, then samples. */
export class Family {
  private readonly lines: string[] = [];
  /** Counter samples left out for a NaN or +-Inf value (a counter never means one). */
  nonFinite = 0;
  /** `name` is the family name; counter samples get `_total` appended. */
  constructor(
    readonly name: string,
    readonly type: "gauge" | "counter",
    readonly help: string,
  ) {}

  /** Adds a sample with pre-rendered labels (see `labels`); a non-finite counter value is left out. */
  add(labelText: string, value: number): this {
    if (this.type === "counter" && !Number.isFinite(value)) {
      this.nonFinite++;
      return this;
    }
    const sample = this.type === "counter" ? `${this.name}_total` : this.name;
    this.lines.push(`${sample}${labelText} ${formatValue(value)}`);
    return this;
  }

  /** Number of samples. */
  get size(): number {
    return this.lines.length;
  }

  /** The family's text in `format`, or "" when it has no samples. */
  render(format: Format): string {
    if (this.lines.length === 0) return "";
    return `${header(this.name, this.type, this.help, format)}${this.lines.join("\n")}\n`;
  }
}
