// A small PromQL tokenizer and a scan for what an expression reads: metric selectors with the
// labels they match on, and the labels of aggregations' by/without clauses. Enough PromQL for
// the rules and dashboards we ship; anything it does not know is an error, never a guess.

export type TokenKind = "ident" | "string" | "number" | "op" | "punct";

export interface Token {
  kind: TokenKind;
  text: string;
}

/** A metric selector: `name{label="v", other=~"re"}`. */
export interface Selector {
  metric: string;
  /** Labels its matchers test, in order. */
  labels: string[];
}

/** An aggregation's `by (...)` or `without (...)` clause and the selectors it aggregates. */
export interface Grouping {
  kind: "by" | "without";
  labels: string[];
  inner: Selector[];
}

export interface ExprUse {
  selectors: Selector[];
  groupings: Grouping[];
}

const AGGREGATIONS = new Set([
  "sum",
  "min",
  "max",
  "avg",
  "group",
  "stddev",
  "stdvar",
  "count",
  "count_values",
  "bottomk",
  "topk",
  "quantile",
  "limitk",
  "limit_ratio",
]);
/** Keywords followed by a parenthesised label list. */
const LABEL_LIST_KEYWORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
]);
const OTHER_KEYWORDS = new Set(["offset", "bool", "and", "or", "unless", "atan2", "inf", "nan"]);
const OPS = ["=~", "!~", "!=", "==", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%", "^", "@"];
const PUNCT = new Set(["(", ")", "{", "}", "[", "]", ","]);
const IDENT = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const NUMBER = /^(?:0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?[a-zA-Z0-9]*)/;

/** Splits a PromQL expression into tokens; throws on a character it does not know. */
export function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    const rest = expr.slice(i);
    if (/\s/.test(c)) {
      i++;
    } else if (c === "#") {
      const eol = expr.indexOf("\n", i);
      i = eol < 0 ? expr.length : eol;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < expr.length && expr[j] !== c) j += expr[j] === "\\" && c !== "`" ? 2 : 1;
      if (j >= expr.length) throw new Error(`unterminated string at ${i} in ${expr}`);
      out.push({ kind: "string", text: expr.slice(i, j + 1) });
      i = j + 1;
    } else if (/[0-9.]/.test(c) && NUMBER.test(rest)) {
      const m = NUMBER.exec(rest)![0];
      out.push({ kind: "number", text: m });
      i += m.length;
    } else if (IDENT.test(rest)) {
      const m = IDENT.exec(rest)![0];
      out.push({ kind: "ident", text: m });
      i += m.length;
    } else if (PUNCT.has(c)) {
      out.push({ kind: "punct", text: c });
      i++;
    } else {
      const op = OPS.find((o) => rest.startsWith(o));
      if (!op) throw new Error(`unexpected '${c}' at ${i} in ${expr}`);
      out.push({ kind: "op", text: op });
      i += op.length;
    }
  }
  return out;
}

/** Index of the bracket closing the one at `open`. */
function closing(tokens: Token[], open: number): number {
  const o = tokens[open]!.text;
  const c = o === "(" ? ")" : o === "{" ? "}" : "]";
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== "punct") continue;
    if (t.text === o) depth++;
    else if (t.text === c && --depth === 0) return i;
  }
  throw new Error(`unbalanced '${o}'`);
}

/** The identifiers of a `(a, b)` list starting at `open`. */
function labelList(tokens: Token[], open: number): { labels: string[]; end: number } {
  const end = closing(tokens, open);
  const labels: string[] = [];
  for (let i = open + 1; i < end; i++) {
    const t = tokens[i]!;
    if (t.kind === "ident") labels.push(t.text);
    else if (t.text !== ",") throw new Error(`unexpected '${t.text}' in a label list`);
  }
  return { labels, end };
}

/** The label names of the matchers in `{...}` starting at `open`. */
function matchers(tokens: Token[], open: number): { labels: string[]; end: number } {
  const end = closing(tokens, open);
  const labels: string[] = [];
  for (let i = open + 1; i < end; i += 4) {
    const [name, op, value] = [tokens[i], tokens[i + 1], tokens[i + 2]];
    if (name?.kind !== "ident" || op?.kind !== "op" || value?.kind !== "string")
      throw new Error(`bad label matcher at token ${i}`);
    labels.push(name.text);
    const sep = tokens[i + 3];
    if (i + 3 < end && sep?.text !== ",") throw new Error(`expected ',' at token ${i + 3}`);
  }
  return { labels, end };
}

/** The metric selectors of an expression and the by/without clauses of its aggregations. */
export function analyze(expr: string): ExprUse {
  const tokens = tokenize(expr);
  const selectors: { at: number; sel: Selector }[] = [];
  const aggregations: { at: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (t.kind === "punct" && t.text === "[") {
      i = closing(tokens, i); // range or subquery durations
      continue;
    }
    if (t.kind === "punct" && t.text === "{")
      throw new Error("selectors without a metric name are not supported");
    if (t.kind !== "ident" || OTHER_KEYWORDS.has(t.text.toLowerCase())) continue;
    if (LABEL_LIST_KEYWORDS.has(t.text)) {
      if (next?.text === "(") i = labelList(tokens, i + 1).end;
    } else if (AGGREGATIONS.has(t.text) && ["(", "by", "without"].includes(next?.text ?? "")) {
      aggregations.push({ at: i });
    } else if (next?.text !== "(") {
      const sel: Selector = { metric: t.text, labels: [] };
      selectors.push({ at: i, sel });
      if (next?.text === "{") {
        const m = matchers(tokens, i + 1);
        sel.labels = m.labels;
        i = m.end;
      }
    }
  }
  const groupings = aggregations.flatMap(({ at }) => {
    let i = at + 1;
    let clause: { kind: "by" | "without"; labels: string[] } | undefined;
    const kw = tokens[i];
    if (kw?.text === "by" || kw?.text === "without") {
      const l = labelList(tokens, i + 1);
      clause = { kind: kw.text, labels: l.labels };
      i = l.end + 1;
    }
    const end = closing(tokens, i);
    const after = tokens[end + 1];
    if (!clause && (after?.text === "by" || after?.text === "without"))
      clause = { kind: after.text, labels: labelList(tokens, end + 2).labels };
    if (!clause) return [];
    const inner = selectors.filter((s) => s.at > i && s.at < end).map((s) => s.sel);
    return [{ ...clause, inner }];
  });
  return { selectors: selectors.map((s) => s.sel), groupings };
}
