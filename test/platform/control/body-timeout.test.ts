// A platform answer whose headers come at once and whose body trickles past the timeout is
// reported as a body that did not finish, not as no response; durations read as "300ms", "4.5s".
import { createServer } from "node:http";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { PlatformTimeoutError } from "../../../src/platform/http-errors.js";
import { testControl } from "../../helpers/control.js";
import { listenLoopback } from "../../helpers/loopback.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A loopback API that sends its headers (or not) and then a byte every 20 ms, never finishing. */
async function trickling(headers: boolean): Promise<string> {
  const server = createServer((_req, res) => {
    if (headers) res.writeHead(200, { "content-type": "application/json" }).write("[");
    const drip = setInterval(() => {
      if (headers) res.write(" ");
    }, 20);
    res.on("close", () => clearInterval(drip));
  });
  const l = await listenLoopback(server);
  closers.push(l.close);
  return l.url;
}

async function readError(url: string, timeoutMs: number): Promise<PlatformTimeoutError> {
  const c = testControl({ apiUrl: url, timeoutMs, dispatcher: new Agent() });
  closers.unshift(() => c.close(true));
  const err = await c.getSandbox("s1").then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PlatformTimeoutError);
  return err as PlatformTimeoutError;
}

// 900 ms: the headers come within it on a loaded machine too (the assertions need them to).
describe("a control read that times out", () => {
  it("says the body did not finish, and when the headers came, when they did", async () => {
    const err = await readError(await trickling(true), 900);
    expect(err.code).toBe("ERR_PLATFORM_TIMEOUT");
    expect(err.message).toMatch(
      /^GET \/sandboxes\/\{id\}: body not complete within 900ms; headers arrived after \d{1,3}ms$/,
    );
    expect(err.headersMs).toBeLessThan(900);
  });

  it("says no response when no headers came", async () => {
    const err = await readError(await trickling(false), 900);
    expect(err.message).toBe("GET /sandboxes/{id}: no response within 900ms");
    expect(err.headersMs).toBeUndefined();
  });
});
