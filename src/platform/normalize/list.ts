// One page of a list: a bare array or a wrapper object; the next token from the body or a header.

import type { Page } from "../types.js";
import { type Candidate, firstPresent } from "./fields.js";
import { RECORD_FIELD } from "./invalid-values.js";
import type { Normalizer } from "./normalizer.js";
import { isRecord, looseKey, NormalizeError, UntrackableRecordError } from "./values.js";

type Json = Record<string, unknown>;
type Headers = Record<string, string | string[] | undefined>;

/** Options of a list read: wrapper keys instead of the built-in ones (a field map's win). */
export interface ListOptions {
  wrapperKeys?: string[];
}

/** A list page whose items are normalized on demand (so the next request can be in flight meanwhile). */
export interface DeferredPage<T> {
  nextToken?: string;
  size: number;
  /** E2B's X-Total-Running header: running sandboxes matching the filters, by the platform's count. */
  totalRunning?: number;
  /**
   * Normalizes the items. An item that cannot be tracked (not an object, no id) is left out and
   * counted in the normalizer's `invalid`; `size` still counts it. A page none of whose items is
   * an object is a NormalizeError: it is no list of records.
   */
  items(): T[];
}

/** Objects that commonly hold the paging fields beside the list. */
const PAGING_HOLDERS = ["pagination", "meta", "page", "paging", "pageInfo", "page_info", "links"];
/** Flags that say there is no next page, whatever token is present (`cursor` may name the last item). */
const MORE_FLAGS = ["hasMore", "has_more", "hasNext", "has_next", "hasNextPage", "has_next_page"];
/** Query parameters that carry the token when the body's "next" is a URL. */
const TOKEN_PARAMS = ["nextToken", "next_token", "cursor", "pageToken", "page_token", "token"];
/** Token spellings compared loosely ("NextToken" from a Go struct without JSON tags). */
const LOOSE_TOKEN_KEYS = new Set(["nexttoken", "nextcursor", "cursor", "next"]);

/**
 * Reads a page: a bare array, or an object holding it under `sandboxes|items|data|nodes|templates|
 * entries|logs|results` (or the field map's `list.items`, a dotted path allowed), also one level
 * down (`{data:{items:[...]}}`), else under its only array field. Anything else (`null`, an empty
 * body, text, a number, an object holding no list) is a NormalizeError: read as an empty page, a
 * proxy's empty 200 would empty the fleet. The next token comes from the body (`nextToken|
 * next_token|cursor|nextCursor|next_cursor|next`, also under `pagination|meta|...`), else the
 * `x-next-token` header (any case); an empty or null token ends the walk.
 */
export function deferList<T>(
  n: Normalizer,
  body: unknown,
  headers: Headers,
  /** One item; undefined leaves it out uncounted (a record of another shard). */
  item: (raw: unknown, path: string) => T | undefined,
  options: ListOptions = {},
): DeferredPage<T> {
  const t = n.list;
  const mapped = n.fieldMap.list;
  const itemKeys =
    options.wrapperKeys && !mapped?.items ? options.wrapperKeys : t.fields.items.cands;
  const { list, prefix, holder } = findItems(body, itemKeys);
  let token: string | undefined;
  const tokenKeys = t.fields.nextToken.cands;
  const loose = mapped?.nextToken === undefined;
  if (isRecord(body)) token = tokenIn(body, tokenKeys, loose, 0);
  if (token === undefined && holder) token = tokenIn(holder, tokenKeys, loose, 0);
  if (token === undefined) token = headerValue(headers, t.fields.nextTokenHeader.cands);
  const paths = n.indexPaths;
  const page: DeferredPage<T> = {
    size: list.length,
    items() {
      const items = new Array<T>(list.length);
      let kept = 0;
      let dropped: UntrackableRecordError[] | undefined;
      for (let i = 0; i < list.length; i++) {
        try {
          const v = item(list[i], indexPath(paths, prefix, i));
          if (v !== undefined) items[kept++] = v;
        } catch (err) {
          // One record the walk cannot track must not fail the page, and with it the fleet.
          if (!(err instanceof UntrackableRecordError)) throw err;
          dropped ??= [];
          dropped.push(err);
        }
      }
      if (dropped === undefined) {
        items.length = kept;
        return items;
      }
      // A page holding no object at all is no list of records (`[[[...]]]`, a list of ids).
      const first = dropped[0] as UntrackableRecordError;
      if (kept === 0 && dropped.every((e) => e.field === RECORD_FIELD)) throw first;
      for (const e of dropped) n.invalid.add(e.resource, e.field);
      items.length = kept;
      return items;
    },
  };
  if (token !== undefined && token.trim() !== "") page.nextToken = token;
  const running = headerValue(headers, TOTAL_RUNNING_HEADER);
  if (running !== undefined && /^\s*\d{1,12}\s*$/.test(running))
    page.totalRunning = Number(running);
  return page;
}

const TOTAL_RUNNING_HEADER = ["x-total-running"];

const INDEX_PATHS_MAX = 10_000;
const INDEX_PREFIXES_MAX = 64;

/**
 * The path `prefix[i]` naming one item in errors, from `cache` (`prefix[i]` strings by prefix,
 * made once: every item of every page is named, errors or not).
 */
function indexPath(cache: Map<string, string[]>, prefix: string, i: number): string {
  if (i >= INDEX_PATHS_MAX) return `${prefix}[${i}]`;
  let paths = cache.get(prefix);
  if (paths === undefined) {
    if (cache.size >= INDEX_PREFIXES_MAX) cache.clear();
    paths = [];
    cache.set(prefix, paths);
  }
  let path = paths[i];
  if (path === undefined) {
    path = `${prefix}[${i}]`;
    paths[i] = path;
  }
  return path;
}

/** Like deferList, with the items normalized at once. */
export function normalizeList<T>(
  n: Normalizer,
  body: unknown,
  headers: Headers,
  item: (raw: unknown, path: string) => T,
  options: ListOptions = {},
): Page<T> {
  const d = deferList(n, body, headers, item, options);
  const items = d.items();
  return d.nextToken === undefined ? { items } : { items, nextToken: d.nextToken };
}

interface Found {
  list: unknown[];
  prefix: string;
  /** The object the list was found in, when it is not the body itself. */
  holder?: Json;
}

function findItems(body: unknown, keys: readonly Candidate[]): Found {
  if (Array.isArray(body)) return { list: body, prefix: "" };
  if (!isRecord(body)) {
    const empty = body === undefined || (typeof body === "string" && body.trim() === "");
    throw new NormalizeError(
      "body",
      "a list (an array, or an object holding one)",
      body,
      empty ? "an empty body" : undefined,
    );
  }
  const top = under(body, keys, "");
  if (top) return top;
  for (const k of keys) {
    const name = typeof k === "string" ? k : k.join(".");
    const inner = firstPresent(body, [k]);
    if (!isRecord(inner)) continue;
    const nested = under(inner, keys, `${name}.`);
    if (nested) return { ...nested, holder: inner };
  }
  let only: string | undefined;
  for (const k in body) {
    if (!Array.isArray(body[k])) continue;
    if (only !== undefined) {
      only = undefined;
      break;
    }
    only = k;
  }
  if (only !== undefined) return { list: body[only] as unknown[], prefix: only };
  // A null list is no list: read as an empty page it would empty the fleet, as a missing one would.
  for (const k of keys) {
    if (typeof k === "string" && body[k] === null) throw new NormalizeError(k, "an array", null);
  }
  const names = keys.map((k) => (typeof k === "string" ? k : k.join("."))).join("|");
  const seen = Object.keys(body).join(", ");
  throw new NormalizeError(
    "body",
    `an array, or an object holding one under ${names}`,
    body,
    `an object with keys ${seen || "(none)"}`,
  );
}

/** The list under one of the keys of `obj` (a null one is no list). */
function under(obj: Json, keys: readonly Candidate[], prefix: string): Found | undefined {
  for (const k of keys) {
    const name = typeof k === "string" ? k : k.join(".");
    const v = typeof k === "string" ? obj[k] : firstPresent(obj, [k]);
    if (Array.isArray(v)) return { list: v, prefix: `${prefix}${name}` };
    if (v !== undefined && v !== null && !isRecord(v)) {
      throw new NormalizeError(`${prefix}${name}`, "an array", v);
    }
  }
  return undefined;
}

/** The next token in `obj` or its paging holders; "" when the body says there is no next page. */
function tokenIn(
  obj: Json,
  keys: readonly Candidate[],
  loose: boolean,
  depth: number,
): string | undefined {
  for (const f of MORE_FLAGS) if (obj[f] === false) return "";
  for (const k of keys) {
    const found = tokenValue(firstPresent(obj, [k]), keys, loose, depth);
    if (found !== undefined) return found;
  }
  if (loose) {
    for (const k in obj) {
      if (!LOOSE_TOKEN_KEYS.has(looseKey(k))) continue;
      const found = tokenValue(obj[k], keys, loose, depth);
      if (found !== undefined) return found;
    }
  }
  if (depth > 0) return undefined;
  for (const h of PAGING_HOLDERS) {
    const inner = obj[h];
    if (!isRecord(inner)) continue;
    const found = tokenIn(inner, keys, loose, 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

function tokenValue(
  v: unknown,
  keys: readonly Candidate[],
  loose: boolean,
  depth: number,
): string | undefined {
  if (typeof v === "string") return fromUrl(v);
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  // `"next": false` is a flag for the last page; `true` carries no token, so look further.
  if (v === false) return "";
  if (isRecord(v) && depth === 0) return tokenIn(v, keys, loose, 1);
  return undefined;
}

/** A "next" link (`https://.../v2/sandboxes?nextToken=abc`) -> its token; anything else as is. */
function fromUrl(v: string): string {
  const q = v.indexOf("?");
  if (q < 0 || !(v.startsWith("/") || v.includes("://"))) return v;
  const params = new URLSearchParams(v.slice(q + 1));
  for (const p of TOKEN_PARAMS) {
    const t = params.get(p);
    if (t !== null) return t;
  }
  return v;
}

function headerValue(headers: Headers, names: readonly Candidate[]): string | undefined {
  for (const c of names) {
    if (typeof c !== "string") continue;
    const wanted = c.toLowerCase();
    let v = headers[wanted] ?? headers[c];
    if (v === undefined) {
      for (const key in headers) {
        if (key.toLowerCase() === wanted) {
          v = headers[key];
          break;
        }
      }
    }
    const first = Array.isArray(v) ? v[0] : v;
    if (first !== undefined) return first;
  }
  return undefined;
}
