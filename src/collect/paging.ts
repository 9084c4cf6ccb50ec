// Walks every page of a token-paged list, ending with an error (never a loop) on bad paging.
import type { DeferredPage } from "../platform/normalize/normalize.js";
import { ExporterError } from "../util/errors.js";

/**
 * Paging went wrong: a repeated token, an empty page carrying a token, too many pages, or a walk
 * that ran past its time bound (poll.maxWalkMs).
 */
export class PagingError extends ExporterError {
  constructor(
    code:
      | "ERR_PAGING_REPEATED_TOKEN"
      | "ERR_PAGING_EMPTY_PAGE"
      | "ERR_PAGING_CEILING"
      | "ERR_PAGING_WALK_TIMEOUT",
    message: string,
    readonly page: number,
  ) {
    super(code, message);
  }
}

/** Result of a full walk. */
export interface Walk<T> {
  items: T[];
  pages: number;
}

/**
 * Fetches pages until one has no next token; `fetchPage` receives the token of the page to read.
 * The next request is sent before the current page's items are normalized, so parsing overlaps
 * the network wait.
 */
export async function walkPages<T>(
  fetchPage: (token: string | undefined) => Promise<DeferredPage<T>>,
  maxPages: number,
  /** Receives each item instead of the returned list (which then stays empty). */
  sink?: (item: T) => void,
): Promise<Walk<T>> {
  const items: T[] = [];
  const seen = new Set<string>();
  let pending = fetchPage(undefined);
  for (let pages = 1; ; pages++) {
    const page = await pending;
    const next = page.nextToken;
    const last = next === undefined || next === "";
    if (!last) {
      if (page.size === 0) {
        throw new PagingError(
          "ERR_PAGING_EMPTY_PAGE",
          `page ${pages} is empty but carries a next token`,
          pages,
        );
      }
      if (seen.has(next)) {
        throw new PagingError(
          "ERR_PAGING_REPEATED_TOKEN",
          `page ${pages} repeats an earlier next token`,
          pages,
        );
      }
      if (pages >= maxPages) {
        throw new PagingError(
          "ERR_PAGING_CEILING",
          `more than ${maxPages} pages (the configured ceiling; raise poll.maxPages, flag --max-pages, for a larger fleet)`,
          pages,
        );
      }
      seen.add(next);
      pending = fetchPage(next);
      // Marked handled now: it may reject while this page is normalized, before it is awaited.
      pending.catch(() => {});
      // Let the HTTP client put the request on the wire before this turn is spent normalizing.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (sink) for (const item of page.items()) sink(item);
    else for (const item of page.items()) items.push(item);
    if (last) return { items, pages };
  }
}
