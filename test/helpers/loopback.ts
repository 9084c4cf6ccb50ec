// A test server on an ephemeral loopback port, and the closer that ends it and its connections.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Listens `server` on 127.0.0.1:0; its port, and a closer that cuts open connections too. */
export async function listenLoopback(
  server: Server,
): Promise<{ port: number; url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { port, url: `http://127.0.0.1:${port}`, close };
}
