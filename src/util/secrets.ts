// What a secret looks like: which key names hold one, the secret values this process holds, and
// the one function that removes those values from text.

/** What a secret is replaced with. */
export const REDACTED = "[REDACTED]";
/** Shorter values are not scrubbed: replacing every "abc" would mangle ordinary text. */
const MIN_SECRET_CHARS = 4;
/** How many run-time values (agent access tokens) are kept; the oldest is forgotten first. */
const MAX_TRANSIENT = 256;
/** How deep scrubError follows causes and nested objects. */
const MAX_ERROR_DEPTH = 4;
/** Marks left by code that cuts a long text to an excerpt. */
const CUT_MARKS = /\.\.\.|…/g;

/** Words that make a key name secret wherever they appear in it (`apiKey`, `x-access-token`, `auth`). */
const SECRET_WORDS = new Set([
  "token",
  "secret",
  "password",
  "passwd",
  "key",
  "apikey",
  "auth",
  "authorization",
  "cookie",
  "credential",
  "credentials",
  "private",
]);
/**
 * A last word that makes the name say where or how a secret is used rather than hold it: the
 * paths `apiKeyFile` and `bearerTokenFile`, the header name `authHeader`, the enum `authStyle`, the
 * switch `e2bAuthExempt`.
 */
const REFERENCE_WORDS = new Set(["file", "path", "header", "style", "exempt"]);

/**
 * Whether a field or key of this name holds a secret: one of its words (camelCase, snake_case or
 * kebab-case) is a secret word, and its last word does not make it a reference to one. The one
 * rule for log fields, configuration shown to operators and platform fields kept as labels.
 */
export function isSecretKey(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
  const last = words[words.length - 1];
  if (last === undefined || REFERENCE_WORDS.has(last)) return false;
  return words.some((w) => SECRET_WORDS.has(w));
}

/**
 * Field names the logger redacts: it cannot apply a rule, only paths. Each secret word as a whole
 * name, and the compound spellings this code itself writes (log fields, request headers); each is
 * secret by isSecretKey (a test holds it).
 */
export const SECRET_FIELD_NAMES: readonly string[] = [
  ...SECRET_WORDS,
  "apiKey",
  "api_key",
  "accessToken",
  "access_token",
  "bearerToken",
  "x-api-key",
  "x-access-token",
];

/**
 * Secret values (API key, admin token, agent access tokens) and `scrub`, which replaces each of
 * them, and its URL-encoded, JSON-escaped and base64 forms, with `[REDACTED]`.
 */
export class Secrets {
  private readonly permanent = new Set<string>();
  /** Insertion order is age: the first key is the oldest. */
  private readonly transient = new Map<string, true>();
  /** Every form of every value, longest first; undefined when a value changed since. */
  private forms: readonly string[] | undefined = [];
  private pattern: RegExp | undefined;

  /** `values`: kept for the life of the instance (empty and short ones are ignored). */
  constructor(values: Iterable<string | undefined> = []) {
    for (const v of values) this.add(v);
  }

  /** Keeps `value` for the life of the instance (configuration secrets). */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_CHARS || this.permanent.has(value)) return;
    this.permanent.add(value);
    this.transient.delete(value);
    this.forms = undefined;
  }

  /** Keeps `value` among the last 256 run-time secrets (agent access tokens of live sandboxes). */
  addTransient(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_CHARS || this.permanent.has(value)) return;
    if (this.transient.delete(value)) {
      // Known already: only its age changes, the forms stay.
      this.transient.set(value, true);
      return;
    }
    this.transient.set(value, true);
    if (this.transient.size > MAX_TRANSIENT) {
      const oldest = this.transient.keys().next().value as string;
      this.transient.delete(oldest);
    }
    this.forms = undefined;
  }

  /**
   * `text` with every form of every secret replaced by `[REDACTED]`; a secret's head left right
   * before a cut mark (`...`, `…`) by an excerpt that cut the secret is replaced too.
   */
  scrub(text: string): string {
    const forms = this.compiled();
    if (forms.length === 0 || text.length < MIN_SECRET_CHARS) return text;
    return cutHeads(text.replace(this.pattern as RegExp, REDACTED), forms);
  }

  /**
   * Scrubs an error in place and returns it: its message, stack, every string property (e.g.
   * `bodyExcerpt`), and the same in its cause, its `errors` and nested plain objects.
   */
  scrubError<T>(err: T): T {
    if (this.compiled().length > 0) this.scrubObject(err, 0, new Set());
    return err;
  }

  private scrubObject(v: unknown, depth: number, seen: Set<object>): void {
    if (typeof v !== "object" || v === null || depth > MAX_ERROR_DEPTH || seen.has(v)) return;
    if (!(v instanceof Error || Array.isArray(v) || isPlain(v))) return;
    seen.add(v);
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    // An error's message, stack, cause and errors are own properties, but not enumerable.
    if (v instanceof Error) keys.push("message", "stack", "cause", "errors");
    for (const k of keys) {
      if (!Object.hasOwn(o, k)) continue;
      const x = o[k];
      if (typeof x === "string") {
        const clean = this.scrub(x);
        // Reflect.set: a frozen object or a getter without a setter is left as it is.
        if (clean !== x) Reflect.set(o, k, clean);
      } else this.scrubObject(x, depth + 1, seen);
    }
  }

  private compiled(): readonly string[] {
    if (this.forms !== undefined) return this.forms;
    const all = new Set<string>();
    for (const v of this.permanent) for (const f of formsOf(v)) all.add(f);
    for (const v of this.transient.keys()) for (const f of formsOf(v)) all.add(f);
    const forms = [...all].sort((a, b) => b.length - a.length);
    this.forms = forms;
    this.pattern =
      forms.length === 0 ? undefined : new RegExp(forms.map(escapeRegExp).join("|"), "g");
    return forms;
  }
}

/** The spellings a value takes in text: as is, URL-encoded, JSON-escaped, base64 (std and url). */
function formsOf(v: string): string[] {
  const uri = encodeURIComponent(v);
  const base64 = Buffer.from(v, "utf8").toString("base64").replace(/=+$/, "");
  const forms = [
    v,
    uri,
    uri.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
    JSON.stringify(v).slice(1, -1),
    base64,
    base64.replace(/\+/g, "-").replace(/\//g, "_"),
  ];
  return forms.filter((f) => f.length >= MIN_SECRET_CHARS);
}

/** Replaces a secret's head (4 characters or more) that ends right where an excerpt was cut. */
function cutHeads(text: string, forms: readonly string[]): string {
  if (!text.includes("...") && !text.includes("…")) return text;
  let out = "";
  let from = 0;
  for (const m of text.matchAll(CUT_MARKS)) {
    const at = m.index;
    const head = longestHead(text, from, at, forms);
    if (head > 0) {
      out += `${text.slice(from, at - head)}${REDACTED}`;
      from = at;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}

/** Length of the longest proper head of a form that `text` has just before `at` (0 if none). */
function longestHead(text: string, from: number, at: number, forms: readonly string[]): number {
  let best = 0;
  for (const f of forms) {
    for (let n = Math.min(f.length - 1, at - from); n >= MIN_SECRET_CHARS && n > best; n--) {
      if (text.startsWith(f.slice(0, n), at - n)) {
        best = n;
        break;
      }
    }
  }
  return best;
}

function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
