// A hostile platform in front of the simulator: while `flapping`, every other read of a running
// sandbox (GET /sandboxes/{id}) says "paused", as a state that flaps between replicas would.
import { createServer, request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** The running proxy. */
export interface FlappingState {
  url: string;
  /** Reads of a running sandbox answer "paused" every other time while this is true. */
  flapping: boolean;
  /** "paused" answers made up so far. */
  lies: number;
  close(): Promise<void>;
}

const SANDBOX_READ = /^\/sandboxes\/[^/]+$/;

/** Starts the proxy to `target` (the simulator's E2B API) on 127.0.0.1 at a free port. */
export async function startFlappingState(target: string): Promise<FlappingState> {
  const sockets = new Set<Socket>();
  let reads = 0;
  const proxy: FlappingState = {
    url: "",
    flapping: false,
    lies: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://proxy").pathname;
    const rewrite = req.method === "GET" && SANDBOX_READ.test(path);
    const up = request(
      new URL(req.url ?? "/", target),
      { method: req.method, headers: req.headers },
      (upRes) => {
        if (!rewrite || upRes.statusCode !== 200) {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        upRes.on("data", (c: Buffer) => chunks.push(c));
        upRes.on("end", () => {
          const sandbox = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { state?: string };
          if (proxy.flapping && sandbox.state === "running" && reads++ % 2 === 0) {
            sandbox.state = "paused";
            proxy.lies++;
          }
          const body = JSON.stringify(sandbox);
          res.writeHead(200, {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          });
          res.end(body);
        });
      },
    );
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
