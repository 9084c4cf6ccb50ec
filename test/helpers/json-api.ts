// A hand-written JSON API on loopback for the collector tests (a hostile platform, not the
// simulator), and an E2B-flavored client of it.
import { createServer } from "node:http";
import { Agent } from "undici";
import type { ControlClient } from "../../src/platform/control/control.js";
import type { Clock } from "../../src/util/clock.js";
import { testControl } from "./control.js";
import { listenLoopback } from "./loopback.js";

/** What the API answers a request: status, JSON body, extra headers. */
export type JsonAnswer = [status: number, body: unknown, headers?: Record<string, string>];

/** Serves `route`'s answer to every request; `control` reads it as E2B's API (root paths). */
export async function startJsonApi(
  route: (url: URL) => JsonAnswer,
  clock: Clock,
): Promise<{ control: ControlClient; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const [status, body, headers] = route(new URL(req.url ?? "/", "http://x"));
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  });
  const l = await listenLoopback(server);
  const control = testControl({
    apiUrl: l.url,
    apiPrefix: "",
    flavor: "e2b",
    clock,
    dispatcher: new Agent(),
  });
  return {
    control,
    close: async () => {
      await control.close();
      await l.close();
    },
  };
}
