// The one paged reader of every token-paged list: a page limit and a time limit per read, loop
// detection, a pass that resumes where the last read stopped, and a result that says where and why
// it stopped instead of throwing away what it read. walkPages is its strict form (the sandbox walk).
import type { DeferredPage } from "../platform/normalize/normalize.js";
import { ExporterError } from "../util/errors.js";

/** Why a read stopped before the list's end. */
export type PagingCode =
  | "ERR_PAGING_REPEATED_TOKEN"
  | "ERR_PAGING_EMPTY_PAGE"
  | "ERR_PAGING_CEILING"
  | "ERR_PAGING_WALK_TIMEOUT"
  | "ERR_PAGING_PAGE_LIMIT"
  | "ERR_PAGING_TIME_LIMIT";

/**
 * Paging went wrong (a repeated token, an empty page carrying a token, too many pages, a walk past
 * its time bound), or a read stopped at its page or time limit for this tick.
 */
export class PagingError extends ExporterError {
  declare readonly code: PagingCode;
  constructor(
    code: PagingCode,
    message: string,
    readonly page: number,
  ) {
    super(code, message);
  }
}

/** Limits that end a read (and resume it next time) rather than break the pass. */
const RESUMABLE: ReadonlySet<string> = new Set(["ERR_PAGING_PAGE_LIMIT", "ERR_PAGING_TIME_LIMIT"]);

/** Result of a full walk. */
export interface Walk<T> {
  items: T[];
  pages: number;
}

/** Where a pass stopped: the next read of the list goes on from it. */
export interface PageCursor {
  /** The next token to ask for. */
  readonly token: string;
  /** Pages of the pass so far: its ceiling counts them all. */
  readonly pages: number;
  /** Every next token of the pass so far: one seen again is a loop. */
  readonly seen: ReadonlySet<string>;
}

/** What bounds one read. */
export interface PageBounds {
  /** Pages of one pass at most, across reads (poll.maxPages). */
  maxPages: number;
  /** Pages of this read at most (a tick's share); default maxPages. */
  pagesPerRead?: number;
  /** No page is asked for once `now()` reaches `at` (the read's time limit, `ms` long). */
  timeLimit?: { now: () => number; at: number; ms: number };
  /** No page is asked for once this aborts (the collector's deadline). */
  signal?: AbortSignal | undefined;
}

/** How one read of a list ended. */
export interface PagedRead {
  /** Pages this read asked for. */
  pages: number;
  /** The list's last page was read. */
  complete: boolean;
  /** Stopped at this read's page or time limit: the next read goes on from here. */
  resume?: PageCursor;
  /** Why it stopped before the end: a limit (with `resume`), or bad paging that ends the pass. */
  stopped?: PagingError;
}

/** The next token of an answer paged by header (E2B's X-Next-Token); undefined on the last page. */
export function nextTokenOf(headers: Record<string, string | string[] | undefined>) {
  const next = headers["x-next-token"];
  const token = Array.isArray(next) ? next[0] : next;
  return token === undefined || token === "" ? undefined : token;
}

/**
 * Reads pages from `from` (or the first page) until the last, a limit, or bad paging, passing
 * every item to `sink`; never throws on paging (the result says why it stopped), only when
 * `fetchPage` does. A page whose next token repeats an earlier one is left out (a loop serves
 * pages already read). The next request is sent before the current page's items are normalized,
 * so parsing overlaps the network wait.
 */
export async function readPages<T>(
  fetchPage: (token: string | undefined) => Promise<DeferredPage<T>>,
  bounds: PageBounds,
  sink: (item: T) => void,
  from?: PageCursor,
): Promise<PagedRead> {
  const seen = new Set(from?.seen);
  const perRead = bounds.pagesPerRead ?? bounds.maxPages;
  let total = from?.pages ?? 0;
  let pending = fetchPage(from?.token);
  for (let pages = 1; ; pages++) {
    const page = await pending;
    total++;
    const next = page.nextToken === "" ? undefined : page.nextToken;
    if (next === undefined) {
      for (const item of page.items()) sink(item);
      return { pages, complete: true };
    }
    const broken = badPaging(page.size, seen.has(next), total, bounds.maxPages);
    if (broken) {
      if (broken.code !== "ERR_PAGING_REPEATED_TOKEN") for (const item of page.items()) sink(item);
      return { pages, complete: false, stopped: broken };
    }
    seen.add(next);
    const limit = limitReached(pages, perRead, total, bounds);
    if (limit) {
      for (const item of page.items()) sink(item);
      return {
        pages,
        complete: false,
        stopped: limit,
        resume: { token: next, pages: total, seen },
      };
    }
    pending = fetchPage(next);
    // Marked handled now: it may reject while this page is normalized, before it is awaited.
    pending.catch(() => {});
    // Let the HTTP client put the request on the wire before this turn is spent normalizing.
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (const item of page.items()) sink(item);
  }
}

/** Bad paging on page `total` of a pass (it carries a next token), if any. */
function badPaging(size: number, repeated: boolean, total: number, maxPages: number) {
  if (size === 0)
    return new PagingError(
      "ERR_PAGING_EMPTY_PAGE",
      `page ${total} is empty but carries a next token`,
      total,
    );
  if (repeated)
    return new PagingError(
      "ERR_PAGING_REPEATED_TOKEN",
      `page ${total} repeats an earlier next token`,
      total,
    );
  if (total >= maxPages)
    return new PagingError(
      "ERR_PAGING_CEILING",
      `more than ${maxPages} pages (the configured ceiling; raise poll.maxPages, flag --max-pages, for a larger fleet)`,
      total,
    );
  return undefined;
}

/** This read's page or time limit, reached after its `pages`-th page, if so. */
function limitReached(pages: number, perRead: number, total: number, b: PageBounds) {
  if (pages >= perRead)
    return new PagingError(
      "ERR_PAGING_PAGE_LIMIT",
      `stopped after ${pages} pages, this read's limit; the next read goes on from page ${total + 1}`,
      total,
    );
  const t = b.timeLimit;
  if (b.signal?.aborted || (t !== undefined && t.now() >= t.at))
    return new PagingError(
      "ERR_PAGING_TIME_LIMIT",
      `stopped after ${pages} pages at this read's time limit${t ? ` of ${t.ms} ms` : ""}; the next read goes on from page ${total + 1}`,
      total,
    );
  return undefined;
}

/** Whether a read stopped at a limit it resumes from (not bad paging). */
export function resumable(err: PagingError): boolean {
  return RESUMABLE.has(err.code);
}

/**
 * Fetches pages until one has no next token; `fetchPage` receives the token of the page to read.
 * Strict: bad paging or more than `maxPages` pages throws (a partial walk is never a walk).
 */
export async function walkPages<T>(
  fetchPage: (token: string | undefined) => Promise<DeferredPage<T>>,
  maxPages: number,
  /** Receives each item instead of the returned list (which then stays empty). */
  sink?: (item: T) => void,
): Promise<Walk<T>> {
  const items: T[] = [];
  const read = await readPages(fetchPage, { maxPages }, sink ?? ((item) => items.push(item)));
  if (read.stopped) throw read.stopped;
  return { items, pages: read.pages };
}

/** One list of a read: its endpoint, the pages asked for, and where it stopped short, if it did. */
export interface ListRead {
  list: string;
  pages: number;
  /** Stopped before the list's end: why, and whether the next read goes on from there. */
  truncated?: { code: PagingCode; message: string; resumes: boolean };
}

/** A pass over a long list, several reads long: what it read so far, and where it goes on. */
export interface ListPass<A> {
  cursor: PageCursor;
  acc: A;
}

/** How one read of a pass ended. */
export interface PassRead<A> {
  report: ListRead;
  /** What the pass read so far (all of it when `complete`). */
  acc: A;
  /** The whole list was read. */
  complete: boolean;
  /** The pass goes on at the next read (it stopped at a limit). */
  pass?: ListPass<A>;
  /** Bad paging ended the pass short of the list's end: the next read starts over. */
  broken?: PagingError;
}

/** What a pass over one list needs. */
export interface PassOptions<T, A> {
  /** The list's endpoint, as /status and the metrics name it. */
  list: string;
  fetchPage: (token: string | undefined) => Promise<DeferredPage<T>>;
  bounds: PageBounds;
  /** The pass a previous read left off, if any. */
  previous?: ListPass<A> | undefined;
  /** A new accumulator, or a copy of the previous read's (published data is never changed). */
  start: (from?: A) => A;
  add: (acc: A, item: T) => void;
}

/** One read of a pass over a list: on from where the previous read stopped, or from the start. */
export async function readPass<T, A>(o: PassOptions<T, A>): Promise<PassRead<A>> {
  const acc = o.start(o.previous?.acc);
  const read = await readPages(
    o.fetchPage,
    o.bounds,
    (item) => o.add(acc, item),
    o.previous?.cursor,
  );
  const report: ListRead = { list: o.list, pages: read.pages };
  const stopped = read.stopped;
  if (stopped)
    report.truncated = { code: stopped.code, message: stopped.message, resumes: !!read.resume };
  if (read.resume) return { report, acc, complete: false, pass: { cursor: read.resume, acc } };
  return { report, acc, complete: read.complete, ...(stopped ? { broken: stopped } : {}) };
}

/** The bounds of one tick's read of an inventory list (poll.listPagesPerTick, poll.listMaxMs). */
export function tickBounds(o: {
  poll: { maxPages: number; listPagesPerTick: number; listMaxMs?: number | undefined };
  now: () => number;
  intervalMs?: number | undefined;
  signal?: AbortSignal | undefined;
}): PageBounds {
  const ms = o.poll.listMaxMs ?? (o.intervalMs === undefined ? undefined : o.intervalMs / 2);
  return {
    maxPages: o.poll.maxPages,
    pagesPerRead: o.poll.listPagesPerTick,
    ...(ms === undefined ? {} : { timeLimit: { now: o.now, at: o.now() + ms, ms } }),
    ...(o.signal ? { signal: o.signal } : {}),
  };
}
