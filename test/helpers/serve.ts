// The loopback servers the listener and client tests start: the exporter's listener on stub deps,
// and a bare node:http server with a handler. Each goes on the caller's list, which closes them.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type RunningServer, type ServerDeps, startServer } from "../../src/server/server.js";
import { listenLoopback } from "./loopback.js";
import { stubServerDeps } from "./server.js";

/** The listener on `listen` with the stub deps and `over`; its reloads and warnings recorded. */
export async function serveListener(
  servers: Array<{ close(): Promise<void> }>,
  over: Partial<ServerDeps> = {},
  listen = "127.0.0.1:0",
): Promise<{
  server: RunningServer;
  url: string;
  reloads: number[];
  warnings: Array<{ obj: object; msg: string }>;
}> {
  const reloads: number[] = [];
  const warnings: Array<{ obj: object; msg: string }> = [];
  const server = await startServer(
    listen,
    stubServerDeps({
      reload: async () => {
        reloads.push(reloads.length + 1);
        return { ok: true };
      },
      logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
      ...over,
    }),
  );
  servers.push(server);
  // Whatever the bind address, the test reaches the server over loopback.
  return { server, url: `http://127.0.0.1:${server.port}`, reloads, warnings };
}

/** A loopback server answering with `handler`; every request it got (url and headers). */
export async function serveHandler(
  closers: Array<() => Promise<void>>,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; seen: Array<{ url: string; headers: IncomingMessage["headers"] }> }> {
  const seen: Array<{ url: string; headers: IncomingMessage["headers"] }> = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    handler(req, res);
  });
  const listening = await listenLoopback(server);
  closers.push(listening.close);
  return { url: listening.url, seen };
}
