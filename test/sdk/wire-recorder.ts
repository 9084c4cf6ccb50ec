// A loopback pass-through proxy for the data plane: it records what each request carried (Host
// included) and forwards it unchanged, streaming the answer back, so a Connect stream stays one.
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from "node:http";
import type { AddressInfo } from "node:net";

/** One request as it reached the data plane. */
export interface WireRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface WireRecorder {
  /** `http://127.0.0.1:{port}`: give it to a client in place of the data plane's address. */
  url: string;
  port: number;
  requests: WireRequest[];
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

/** Starts the recorder in front of `targetPort` on 127.0.0.1. */
export async function startWireRecorder(targetPort: number): Promise<WireRecorder> {
  const requests: WireRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.byteLength;
      if (size > MAX_BODY_BYTES) req.destroy();
      else chunks.push(c);
    });
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? "/", "http://recorder");
      requests.push({
        method: req.method ?? "",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
      });
      const upstream = httpRequest(
        {
          host: "127.0.0.1",
          port: targetPort,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
