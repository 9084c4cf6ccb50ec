// The state of normalizing: compiled field tables and the caches that make 100,000 records a
// cycle cheap. Each reader of the platform owns one, so no reader's records change another's reads.
import { KeyNames } from "./collect.js";
import { compileTable, type FieldMap, type Fields, type FieldTable, openTable } from "./fields.js";
import { InvalidValues } from "./invalid-values.js";

/**
 * Field tables of every resource compiled for one field map, and the caches of the records seen.
 * Pass it to the normalize functions; give each caller (poller, prober, policy) its own: the
 * tables remember the shape of the last record they read.
 */
export class Normalizer {
  readonly fieldMap: FieldMap;
  readonly sandbox: FieldTable<Fields<"sandbox">>;
  readonly node: FieldTable<Fields<"node">>;
  readonly template: FieldTable<Fields<"template">>;
  readonly log: FieldTable<Fields<"log">>;
  readonly list: FieldTable<Fields<"list">>;
  /** Every key of the cluster overview is collected. */
  readonly overview: FieldTable<never>;
  /** Raw state -> lower-cased state (see records.ts). */
  readonly states = new Map<string, string>();
  /** Metadata content -> one frozen map shared by the sandboxes that carry it. */
  readonly metadata = new Map<string, Record<string, string>>();
  /** Template ids, one string per distinct id. */
  readonly templateIds = new Map<string, string>();
  /** `prefix[i]` item paths by prefix (see list.ts). */
  readonly indexPaths = new Map<string, string[]>();
  /** Values and records left out because they did not parse or were out of range. */
  readonly invalid = new InvalidValues();

  /** Compiles the tables of `fieldMap` (our field name -> the platform's key, per resource). */
  constructor(fieldMap: FieldMap = {}) {
    this.fieldMap = fieldMap;
    const names = new KeyNames();
    this.sandbox = compileTable("sandbox", fieldMap.sandbox ?? {}, names, this.invalid);
    this.node = compileTable("node", fieldMap.node ?? {}, names, this.invalid);
    this.template = compileTable("template", fieldMap.template ?? {}, names, this.invalid);
    this.log = compileTable("log", fieldMap.log ?? {}, names, this.invalid);
    this.list = compileTable("list", fieldMap.list ?? {}, names, this.invalid);
    this.overview = openTable(names, "overview", this.invalid);
  }

  /** A new normalizer for the same field map that shares none of this one's state. */
  fresh(): Normalizer {
    return new Normalizer(this.fieldMap);
  }
}
