import { describe, expect, it } from "vitest";
import { PagingError, walkPages } from "../../src/collect/paging.js";
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
