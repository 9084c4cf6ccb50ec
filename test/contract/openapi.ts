// An OpenAPI 3.0 document as a contract: which path template a request path is an instance of,
// the query parameters an operation declares, and ajv validators of its request and response bodies.
import { readFileSync } from "node:fs";
import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { parse } from "yaml";

type Json = Record<string, unknown>;

/** Where the document's component schemas are registered in ajv, one URI each. */
const SCHEMAS = "https://contract.test/components/schemas/";
const SCHEMA_REF = "#/components/schemas/";
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

function isRecord(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * An OpenAPI 3.0 schema as JSON Schema (draft 7): `nullable: true` becomes a "null" type (or, where
 * there is no type, an anyOf with one), extension keys (`x-...`) go, and `$ref`s to component
 * schemas point where they are registered (SCHEMAS + name).
 */
export function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!isRecord(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith("x-") || k === "nullable") continue;
    if (k !== "$ref") out[k] = toJsonSchema(v);
    else if (typeof v === "string" && v.startsWith(SCHEMA_REF))
      out[k] = `${SCHEMAS}${v.slice(SCHEMA_REF.length)}`;
    else throw new Error(`$ref ${JSON.stringify(v)} is not a component schema`);
  }
  if (node.nullable !== true) return out;
  if (typeof out.type === "string") {
    out.type = [out.type, "null"];
    if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [out, { type: "null" }] };
}

/** One operation of the document: its template, method and definition. */
export interface Operation {
  template: string;
  method: string;
  definition: Json;
  /** Parameters declared on the path item, shared by its operations. */
  shared: unknown[];
}

/** The contract one OpenAPI document states. */
export class OpenApiContract {
  readonly paths: Json;
  private readonly doc: Json;
  private readonly ajv: Ajv;

  constructor(doc: unknown) {
    if (!isRecord(doc) || !isRecord(doc.paths)) throw new Error("not an OpenAPI document");
    this.doc = doc;
    this.paths = doc.paths;
    this.ajv = new Ajv({ strict: true, strictTypes: false, strictTuples: false, allErrors: true });
    addFormats.default(this.ajv);
    // Formats ajv-formats does not know; E2B's Go server emits them for unsigned counters.
    this.ajv.addFormat("uint32", {
      type: "number",
      validate: (n: number) => Number.isInteger(n) && n >= 0 && n <= 0xffff_ffff,
    });
    this.ajv.addFormat("uint64", {
      type: "number",
      validate: (n: number) => Number.isInteger(n) && n >= 0,
    });
    this.ajv.addFormat("int", { type: "number", validate: (n: number) => Number.isInteger(n) });
    const components = isRecord(doc.components) ? doc.components : {};
    const schemas = isRecord(components.schemas) ? components.schemas : {};
    for (const [name, schema] of Object.entries(schemas))
      this.ajv.addSchema(toJsonSchema(schema) as Json, `${SCHEMAS}${name}`);
  }

  /** Reads a YAML (or JSON) document. */
  static load(file: string): OpenApiContract {
    return new OpenApiContract(parse(readFileSync(file, "utf8")));
  }

  /**
   * The document's path template that `path` is an instance of (`/sandboxes/abc` ->
   * `/sandboxes/{sandboxID}`); a template with more literal segments wins (`/sandboxes/metrics`).
   */
  template(path: string): string | undefined {
    const segs = path.split("/");
    let best: string | undefined;
    let bestLiterals = -1;
    for (const template of Object.keys(this.paths)) {
      const parts = template.split("/");
      if (parts.length !== segs.length) continue;
      let literals = 0;
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const part = parts[i] as string;
        const seg = decodeURIComponent(segs[i] as string);
        if (/^\{[^}]+\}$/.test(part)) ok = seg !== "";
        else if (part === seg) literals++;
        else ok = false;
      }
      if (ok && literals > bestLiterals) {
        best = template;
        bestLiterals = literals;
      }
    }
    return best;
  }

  /** The operation of `method` on `template`, if the document has one. */
  operation(template: string, method: string): Operation | undefined {
    const item = this.paths[template];
    const m = method.toLowerCase();
    if (!isRecord(item) || !METHODS.includes(m) || !isRecord(item[m])) return undefined;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    return { template, method: m, definition: item[m], shared };
  }

  /** Names of the query parameters an operation declares (its own and its path item's). */
  queryParameters(op: Operation): Set<string> {
    const own = Array.isArray(op.definition.parameters) ? op.definition.parameters : [];
    const names = new Set<string>();
    for (const p of [...op.shared, ...own]) {
      const param = this.deref(p);
      if (param.in === "query" && typeof param.name === "string") names.add(param.name);
    }
    return names;
  }

  /** The response an operation declares for `status`, $ref resolved; undefined when none. */
  response(op: Operation, status: number): Json | undefined {
    const responses = op.definition.responses;
    if (!isRecord(responses)) return undefined;
    const r = responses[String(status)];
    return r === undefined ? undefined : this.deref(r);
  }

  /** A validator of a response's JSON body, or undefined when it declares no JSON content. */
  responseValidator(response: Json): ValidateFunction | undefined {
    return this.jsonValidator(response.content);
  }

  /** A validator of an operation's JSON request body, or undefined when it takes none. */
  requestValidator(op: Operation): ValidateFunction | undefined {
    const body = op.definition.requestBody;
    return body === undefined ? undefined : this.jsonValidator(this.deref(body).content);
  }

  /** Validators of the headers a response declares, by lower-cased name. */
  headerValidators(response: Json): Map<string, ValidateFunction> {
    const out = new Map<string, ValidateFunction>();
    if (!isRecord(response.headers)) return out;
    for (const [name, h] of Object.entries(response.headers)) {
      const schema = this.deref(h).schema;
      if (schema !== undefined) out.set(name.toLowerCase(), this.compile(schema));
    }
    return out;
  }

  private jsonValidator(content: unknown): ValidateFunction | undefined {
    if (!isRecord(content)) return undefined;
    const json = content["application/json"];
    if (!isRecord(json) || json.schema === undefined) return undefined;
    return this.compile(json.schema);
  }

  private compile(schema: unknown): ValidateFunction {
    return this.ajv.compile(toJsonSchema(schema) as Json);
  }

  /** A local `$ref` (`#/components/...`) followed, as often as it takes (bounded). */
  private deref(node: unknown): Json {
    let v = node;
    for (let i = 0; i < 16 && isRecord(v) && typeof v.$ref === "string"; i++) {
      const ref = v.$ref;
      if (!ref.startsWith("#/")) throw new Error(`non-local $ref ${ref}`);
      v = ref
        .slice(2)
        .split("/")
        .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
        .reduce<unknown>((at, key) => (isRecord(at) ? at[key] : undefined), this.doc);
    }
    if (!isRecord(v)) throw new Error(`unresolvable reference ${JSON.stringify(node)}`);
    return v;
  }
}
