import { describe, expect, it } from "vitest";
import { nextTokenOf, PagingError, readPages, walkPages } from "../../src/collect/paging.js";
import type { DeferredPage } from "../../src/platform/normalize/normalize.js";
import type { Page } from "../../src/platform/types.js";

function deferred<T>(page: Page<T>): DeferredPage<T> {
  return {
    ...(page.nextToken !== undefined ? { nextToken: page.nextToken } : {}),
    size: page.items.length,
    items: () => page.items,
  };
}

function pages(list: Array<Page<number>>) {
  let calls = 0;
  const tokens: Array<string | undefined> = [];
  const fetch = async (token: string | undefined) => {
    tokens.push(token);
    const page = list[calls++];
    if (!page) throw new Error("walked past the last page");
    return deferred(page);
  };
  return { fetch, tokens, calls: () => calls };
}

describe("walkPages", () => {
  it("collects every page in order and passes each next token on", async () => {
    const p = pages([
      { items: [1, 2], nextToken: "a" },
      { items: [3], nextToken: "b" },
      { items: [4] },
    ]);
    const walk = await walkPages(p.fetch, 10);
    expect(walk).toEqual({ items: [1, 2, 3, 4], pages: 3 });
    expect(p.tokens).toEqual([undefined, "a", "b"]);
  });

  it("treats an empty-string token as the last page", async () => {
    const p = pages([{ items: [1], nextToken: "" }]);
    expect((await walkPages(p.fetch, 10)).items).toEqual([1]);
  });

  it("ends the walk when the next token repeats", async () => {
    const p = pages([
      { items: [1], nextToken: "a" },
      { items: [2], nextToken: "b" },
      { items: [3], nextToken: "a" },
    ]);
    const err = await walkPages(p.fetch, 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PagingError);
    expect((err as PagingError).code).toBe("ERR_PAGING_REPEATED_TOKEN");
    expect(p.calls()).toBe(3);
  });

  it("ends the walk at the page ceiling, naming the setting to raise", async () => {
    const p = pages([
      { items: [1], nextToken: "a" },
      { items: [2], nextToken: "b" },
      { items: [3], nextToken: "c" },
    ]);
    const err = await walkPages(p.fetch, 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PagingError);
    expect(err).toMatchObject({ code: "ERR_PAGING_CEILING", page: 2 });
    expect((err as PagingError).message).toBe(
      "more than 2 pages (the configured ceiling; raise poll.maxPages, flag --max-pages, for a larger fleet)",
    );
    expect(p.calls()).toBe(2);
  });

  it("ends the walk on an empty page that still carries a token", async () => {
    const p = pages([{ items: [], nextToken: "a" }]);
    await expect(walkPages(p.fetch, 100)).rejects.toMatchObject({ code: "ERR_PAGING_EMPTY_PAGE" });
  });

  it("requests the next page before normalizing the current one", async () => {
    const order: string[] = [];
    const fetch = async (token: string | undefined): Promise<DeferredPage<number>> => {
      order.push(`fetch ${token ?? "first"}`);
      const n = token === undefined ? 1 : 2;
      return {
        ...(n === 1 ? { nextToken: "a" } : {}),
        size: 1,
        items: () => {
          order.push(`items ${n}`);
          return [n];
        },
      };
    };
    expect((await walkPages(fetch, 10)).items).toEqual([1, 2]);
    expect(order).toEqual(["fetch first", "fetch a", "items 1", "items 2"]);
  });

  it("reports a bad record without leaving the prefetched page unhandled", async () => {
    let second: Promise<DeferredPage<number>> | undefined;
    const fetch = (token: string | undefined): Promise<DeferredPage<number>> => {
      if (token === undefined) {
        return Promise.resolve({
          nextToken: "a",
          size: 1,
          items: () => {
            throw new Error("bad record");
          },
        });
      }
      second = Promise.reject(new Error("second page failed"));
      return second;
    };
    await expect(walkPages(fetch, 10)).rejects.toThrow("bad record");
    await expect(second).rejects.toThrow("second page failed");
  });

  it("stops at the page ceiling", async () => {
    let n = 0;
    const endless = async () => deferred({ items: [n], nextToken: `t${n++}` });
    await expect(walkPages(endless, 5)).rejects.toMatchObject({
      code: "ERR_PAGING_CEILING",
      page: 5,
    });
    expect(n).toBe(5);
  });
});

describe("readPages", () => {
  /** An endless list: page n holds n and hands out the token `t<n+1>`, never repeated. */
  function endless() {
    const tokens: Array<string | undefined> = [];
    const fetch = async (token: string | undefined) => {
      tokens.push(token);
      const n = token === undefined ? 0 : Number(token.slice(1));
      return deferred({ items: [n], nextToken: `t${n + 1}` });
    };
    return { fetch, tokens };
  }

  it("stops at its page limit with what it read, and the next read goes on from the saved token", async () => {
    const e = endless();
    const items: number[] = [];
    const first = await readPages(e.fetch, { maxPages: 100, pagesPerRead: 3 }, (i) =>
      items.push(i),
    );
    expect(first).toMatchObject({
      pages: 3,
      complete: false,
      stopped: { code: "ERR_PAGING_PAGE_LIMIT" },
    });
    expect(items).toEqual([0, 1, 2]);
    const second = await readPages(
      e.fetch,
      { maxPages: 100, pagesPerRead: 3 },
      (i) => items.push(i),
      first.resume,
    );
    expect(e.tokens).toEqual([undefined, "t1", "t2", "t3", "t4", "t5"]);
    expect(items).toEqual([0, 1, 2, 3, 4, 5]);
    expect(second.resume?.pages).toBe(6);
  });

  it("counts the pass's pages across reads against the ceiling, and then starts no resume", async () => {
    const e = endless();
    const bounds = { maxPages: 5, pagesPerRead: 3 };
    const first = await readPages(e.fetch, bounds, () => {});
    const second = await readPages(e.fetch, bounds, () => {}, first.resume);
    expect(second).toMatchObject({
      pages: 2,
      complete: false,
      stopped: { code: "ERR_PAGING_CEILING" },
    });
    expect(second.resume).toBeUndefined();
  });

  it("stops at its time limit on the injected clock, and when its deadline aborts", async () => {
    let now = 0;
    const e = endless();
    const timed = async (token: string | undefined) => {
      now += 100;
      return e.fetch(token);
    };
    const limit = { now: () => now, at: 250, ms: 250 };
    const r = await readPages(timed, { maxPages: 100, timeLimit: limit }, () => {});
    expect(r).toMatchObject({ pages: 3, stopped: { code: "ERR_PAGING_TIME_LIMIT" } });
    const stop = new AbortController();
    stop.abort();
    const aborted = await readPages(e.fetch, { maxPages: 100, signal: stop.signal }, () => {});
    expect(aborted).toMatchObject({ pages: 1, stopped: { code: "ERR_PAGING_TIME_LIMIT" } });
  });

  it("finds a loop that spans two reads, and leaves out the page that repeats a token", async () => {
    const p = pages([
      { items: [1], nextToken: "a" },
      { items: [2], nextToken: "b" },
      { items: [1], nextToken: "a" },
    ]);
    const items: number[] = [];
    const first = await readPages(p.fetch, { maxPages: 10, pagesPerRead: 2 }, (i) => items.push(i));
    const second = await readPages(
      p.fetch,
      { maxPages: 10, pagesPerRead: 2 },
      (i) => items.push(i),
      first.resume,
    );
    expect(second).toMatchObject({
      complete: false,
      stopped: { code: "ERR_PAGING_REPEATED_TOKEN" },
    });
    expect(items).toEqual([1, 2]);
  });

  it("reads X-Next-Token in one place: the first value, none on the last page", () => {
    expect(nextTokenOf({ "x-next-token": "abc" })).toBe("abc");
    expect(nextTokenOf({ "x-next-token": ["a", "b"] })).toBe("a");
    expect(nextTokenOf({ "x-next-token": "" })).toBeUndefined();
    expect(nextTokenOf({})).toBeUndefined();
  });
});
