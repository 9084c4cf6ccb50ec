// getJson: the read of a collector that owns its endpoint and parser goes through the same channel
// as every other read (auth, limiter, retries, request metrics, typed and scrubbed errors).
import type { IncomingMessage, ServerResponse } from "node:http";
import { Agent } from "undici";
import { afterAll, describe, expect, it } from "vitest";
import type { ControlOptions, RequestInfo } from "../../../src/platform/control/control.js";
import { RequestLimiter } from "../../../src/platform/control/limiter.js";
import {
  PlatformBodyError,
  PlatformHttpError,
  PlatformNotFoundError,
} from "../../../src/platform/http-errors.js";
import { testControl } from "../../helpers/control.js";
import { errorTexts } from "../../helpers/error-texts.js";
import { serveHandler } from "../../helpers/serve.js";

const KEY = "gj-secret-key-0042";
const closers: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const close of closers) await close();
});

/** A loopback server answering with `handler`; every request it got (url and headers). */
const serve = (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  serveHandler(closers, handler);

/** A client of `apiUrl` with the key, its own dispatcher and no real backoff sleeps. */
function client(apiUrl: string, extra: Partial<ControlOptions> = {}) {
  const dispatcher = new Agent();
  closers.push(() => dispatcher.close());
  const requests: RequestInfo[] = [];
  const c = testControl({
    apiUrl,
    apiKey: KEY,
    dispatcher,
    sleep: async () => {},
    onRequest: (i) => requests.push(i),
    ...extra,
  });
  return { c, requests };
}

function json(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

describe("getJson", () => {
  it("sends the key and the prefix, returns the parsed body, and labels the request with its endpoint", async () => {
    const { url, seen } = await serve((_req, res) => json(res, 200, [{ templateID: "t1" }]));
    const { c, requests } = client(url);
    expect(await c.getJson("/v2/templates", "/v2/templates")).toEqual([{ templateID: "t1" }]);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe("/sandboxapi/v1/v2/templates");
    expect(seen[0]!.headers["x-api-key"]).toBe(KEY);
    expect(seen[0]!.headers.accept).toBe("application/json");
    expect(requests).toMatchObject([{ endpoint: "/v2/templates", method: "GET", status: 200 }]);
    expect(requests[0]!.error).toBeUndefined();
  });

  it("sends the bearer style when configured", async () => {
    const { url, seen } = await serve((_req, res) => json(res, 200, {}));
    const { c } = client(url, { authStyle: "bearer", apiPrefix: "" });
    await c.getJson("/volumes", "/volumes");
    expect(seen[0]!.url).toBe("/volumes");
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("repeats the key of an array, spells numbers and booleans, and leaves out undefined and empty values", async () => {
    const { url, seen } = await serve((_req, res) => json(res, 200, []));
    const { c } = client(url, { apiPrefix: "" });
    await c.getJson("/snapshots", "/snapshots", {
      types: ["a b", "c&d"],
      limit: 100,
      orderAsc: false,
      nextToken: undefined,
      empty: "",
      none: [],
    });
    const q = new URL(seen[0]!.url, "http://x").searchParams;
    expect(q.getAll("types")).toEqual(["a b", "c&d"]);
    expect(q.get("limit")).toBe("100");
    expect(q.get("orderAsc")).toBe("false");
    expect([...q.keys()].sort()).toEqual(["limit", "orderAsc", "types", "types"]);
  });

  it("types a 404 as PlatformNotFoundError naming the endpoint, counted as not_found", async () => {
    const { url } = await serve((_req, res) => json(res, 404, { message: "no such route" }));
    const { c, requests } = client(url);
    const err = await c.getJson("/v2/templates", "/v2/templates").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformNotFoundError);
    expect(err).toMatchObject({ endpoint: "/v2/templates", method: "GET" });
    expect(requests).toMatchObject([
      { endpoint: "/v2/templates", status: 404, error: "not_found" },
    ]);
  });

  it("retries a 5xx as often as the channel says, then types it with the key scrubbed from its excerpt", async () => {
    const { url, seen } = await serve((_req, res) => json(res, 502, { echo: `key ${KEY}` }));
    const { c, requests } = client(url, { retries: 2 });
    const err = await c.getJson("/snapshots", "/snapshots").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformHttpError);
    expect(err).toMatchObject({ status: 502, endpoint: "/snapshots" });
    expect(seen).toHaveLength(3);
    expect(requests.map((r) => r.error)).toEqual(["http_5xx", "http_5xx", "http_5xx"]);
    for (const text of errorTexts(err)) expect(text).not.toContain(KEY);
  });

  it("takes its token from the shared limiter as its caller, and a Retry-After holds its endpoint", async () => {
    let n = 0;
    const { url } = await serve((_req, res) => {
      if (++n === 1) json(res, 429, {}, { "retry-after": "4" });
      else json(res, 200, { ok: true });
    });
    let t = 0;
    const waits: number[] = [];
    const grants: Array<[string, number]> = [];
    const limiter = new RequestLimiter({
      ratePerSecond: 1_000,
      burst: 10,
      now: () => t,
      sleep: async (ms) => {
        waits.push(ms);
        t += ms;
      },
      onGrant: (caller, waited) => grants.push([caller, waited]),
    });
    const { c } = client(url, { limiter, maxRetryAfterMs: 60_000 });
    const policy = c.withOwnNormalizer("policy");
    await expect(policy.getJson("/volumes", "/volumes")).rejects.toBeInstanceOf(PlatformHttpError);
    expect(await policy.getJson("/volumes", "/volumes")).toEqual({ ok: true });
    expect(grants).toEqual([
      ["policy", 0],
      ["policy", 4_000],
    ]);
    expect(waits.reduce((a, b) => a + b, 0)).toBe(4_000);
  });

  it("runs the collector's parser as a normalizer: its error is a scrubbed PlatformBodyError counted as bad_body", async () => {
    const { url } = await serve((_req, res) => json(res, 200, `upstream says ${KEY}`));
    const bad: string[] = [];
    const { c } = client(url, { onBadBody: (e, m) => bad.push(`${m} ${e}`) });
    const parse = (body: unknown): number[] => {
      if (!Array.isArray(body)) throw new Error(`expected a list, got ${JSON.stringify(body)}`);
      return body as number[];
    };
    const err = await c.getJson("/snapshots", "/snapshots", {}, parse).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformBodyError);
    expect(err).toMatchObject({ code: "ERR_PLATFORM_BAD_BODY", endpoint: "/snapshots" });
    expect((err as Error).message).toContain("expected a list, got");
    for (const text of errorTexts(err)) expect(text).not.toContain(KEY);
    expect(bad).toEqual(["GET /snapshots"]);
    // Without a parser the body comes back as sent: reading it is the collector's job.
    expect(await c.getJson("/snapshots", "/snapshots")).toBe(`upstream says ${KEY}`);
  });

  it("getJsonReply hands back the headers a walk pages by", async () => {
    const { url } = await serve((_req, res) => json(res, 200, [1], { "x-next-token": "tok-2" }));
    const { c } = client(url);
    const r = await c.withOwnNormalizer().getJsonReply("/v2/templates", "/v2/templates", {
      limit: 1,
    });
    expect(r.body).toEqual([1]);
    expect(r.headers["x-next-token"]).toBe("tok-2");
  });
});
