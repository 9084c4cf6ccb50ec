// The control channel's request read whole through undici's dispatch API, over real sockets: 1xx
// answers skipped, repeated headers kept, the body cap and the time bound on the whole exchange
// (a queued request included), and the query encoded byte for byte as a URL object encodes it.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import fc from "fast-check";
import { Agent } from "undici";
import { afterEach, describe, expect, it, vi } from "vitest";
import { requestBuffered } from "../../../src/platform/control/buffered-request.js";
import { BodyTooLargeError } from "../../../src/platform/http-errors.js";
import { testTransport } from "../../helpers/control.js";
import { listenLoopback } from "../../helpers/loopback.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const l = await listenLoopback(
    createServer((req, res) => {
      seen.push(req.url ?? "");
      handler(req, res);
    }),
  );
  closers.push(l.close);
  return { url: l.url, seen };
}

function agent(o: ConstructorParameters<typeof Agent>[0] = {}): Agent {
  const a = new Agent(o);
  closers.unshift(() => a.destroy());
  return a;
}

const GET = { path: "/x", method: "GET", headers: {}, maxBodyBytes: 1 << 20 } as const;

describe("requestBuffered", () => {
  it("skips an informational answer and returns the final one, headers lower-cased, a repeated one as a list", async () => {
    const { url } = await serve((_req, res) => {
      res.writeEarlyHints({ link: "</a.css>; rel=preload" });
      res.setHeader("X-Tag", ["a", "b"]);
      res.setHeader("X-Next-Token", "t1");
      res.end('{"ok":true}');
    });
    const heads: number[] = [];
    const r = await requestBuffered(agent(), {
      ...GET,
      origin: url,
      timeoutMs: 5_000,
      onHead: (s) => heads.push(s),
    });
    expect(r.statusCode).toBe(200);
    expect(heads).toEqual([200]);
    expect(r.headers["x-tag"]).toEqual(["a", "b"]);
    expect(r.headers["x-next-token"]).toBe("t1");
    expect(r.body.toString()).toBe('{"ok":true}');
  });

  it("stops reading past the cap and closes the connection", async () => {
    let closed!: () => void;
    const gone = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const { url } = await serve((_req, res) => {
      res.on("close", closed);
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 32);
      let sent = 0;
      const more = () => {
        while (sent < 256 && res.write(chunk)) sent++;
        if (sent < 256) res.once("drain", more);
        else res.end();
      };
      more();
    });
    const err = await requestBuffered(agent(), {
      ...GET,
      origin: url,
      timeoutMs: 5_000,
      maxBodyBytes: 64 * 1024,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BodyTooLargeError);
    expect((err as BodyTooLargeError).max).toBe(64 * 1024);
    await gone; // the server saw the connection cut, not a body read to its end
  });

  it("bounds the whole exchange, not only the pause between two chunks", async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200).write("[");
      const drip = setInterval(() => res.write(" "), 20);
      res.on("close", () => clearInterval(drip));
    });
    const heads: number[] = [];
    const err = await requestBuffered(agent(), {
      ...GET,
      origin: url,
      // Far above the headers' arrival on a loaded machine; the drip would go on for ever.
      timeoutMs: 1_000,
      onHead: (s) => heads.push(s),
    }).catch((e: unknown) => e);
    expect((err as Error).name).toBe("TimeoutError");
    expect(heads).toEqual([200]);
  });

  it("rejects a request still waiting for a connection at its bound", async () => {
    const { url, seen } = await serve(() => undefined); // takes requests, never answers
    const one = agent({ connections: 1 });
    let firstSettled = false;
    const first = requestBuffered(one, { ...GET, origin: url, timeoutMs: 2_000 }).finally(() => {
      firstSettled = true;
    });
    // The first holds the one connection before the second asks for it.
    await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 1_000 });
    const second = await requestBuffered(one, { ...GET, origin: url, timeoutMs: 150 }).catch(
      (e: unknown) => e,
    );
    expect((second as Error).name).toBe("TimeoutError");
    expect(firstSettled).toBe(false); // at its own bound, not once the connection came free
    expect(seen).toHaveLength(1); // the second never reached the server
    await first.catch(() => undefined);
  });
});

describe("the control channel's request target", () => {
  it("sends the query exactly as URLSearchParams on a URL object encodes it", async () => {
    const { url, seen } = await serve((_req, res) => res.end("[]"));
    const t = testTransport({ apiUrl: `${url}/`, dispatcher: agent() });
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "binary", maxLength: 12 }),
        fc.array(fc.string({ unit: "grapheme-ascii", maxLength: 6 }), { maxLength: 3 }),
        fc.string({ unit: "grapheme", maxLength: 8 }),
        async (token, types, id) => {
          const path = `/sandboxes/${encodeURIComponent(id)}/logs`;
          const query = { limit: 100, nextToken: token, types, empty: "" };
          seen.length = 0;
          await t.send({ method: "GET", path, endpoint: "/sandboxes/{id}/logs", query });
          const want = new URL(`${url}/sandboxapi/v1${path}`);
          want.searchParams.set("limit", "100");
          if (token !== "") want.searchParams.set("nextToken", token);
          for (const x of types) if (x !== "") want.searchParams.append("types", x);
          expect(seen).toEqual([`${want.pathname}${want.search}`]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("merges the query into one the base URL carries", async () => {
    const { url, seen } = await serve((_req, res) => res.end("[]"));
    const t = testTransport({ apiUrl: `${url}/api?team=a b`, apiPrefix: "", dispatcher: agent() });
    await t.send({ method: "GET", path: "", endpoint: "/", query: { limit: 5 } });
    expect(seen).toEqual(["/api?team=a+b&limit=5"]);
  });
});
