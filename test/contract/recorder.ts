// A loopback reverse proxy that records every exchange it forwards: what a client sent (method,
// path, query parameter names, body) and what the server answered (status, headers, body).
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
} from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";

/** One request and its answer, as seen on the wire. */
export interface Exchange {
  method: string;
  /** The path, without the query. */
  path: string;
  /** Names of the query parameters, in order, each once. */
  queryNames: string[];
  query: URLSearchParams;
  requestHeaders: IncomingHttpHeaders;
  /** The request body as text; "" when there was none. */
  requestBody: string;
  status: number;
  responseHeaders: Record<string, string | string[] | undefined>;
  responseBody: string;
}

export interface Recorder {
  /** Base URL to give the client in place of the target's. */
  url: string;
  /** Every exchange, in the order the answers came back. */
  exchanges: Exchange[];
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Starts the recorder on 127.0.0.1 at a free port, forwarding to `target` (a base URL). */
export async function startRecorder(target: string): Promise<Recorder> {
  const exchanges: Exchange[] = [];
  const server: Server = createServer((req, res) => {
    forward(target, req, exchanges).then(
      ({ status, headers, body }) => {
        res.writeHead(status, headers);
        res.end(body);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function forward(
  target: string,
  req: IncomingMessage,
  exchanges: Exchange[],
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > MAX_BODY_BYTES) throw new Error("request body too large");
    chunks.push(chunk as Buffer);
  }
  const requestBody = Buffer.concat(chunks).toString("utf8");
  const url = new URL(req.url ?? "/", "http://recorder");
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (typeof v === "string" && k !== "host" && k !== "connection") headers[k] = v;
  }
  const method = req.method ?? "GET";
  const up = await request(`${target}${url.pathname}${url.search}`, {
    method: method as "GET",
    headers,
    body: requestBody === "" ? undefined : requestBody,
  });
  const body = Buffer.from(await up.body.arrayBuffer());
  exchanges.push({
    method,
    path: url.pathname,
    queryNames: [...new Set(url.searchParams.keys())],
    query: url.searchParams,
    requestHeaders: req.headers,
    requestBody,
    status: up.statusCode,
    responseHeaders: up.headers,
    responseBody: body.toString("utf8"),
  });
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(up.headers)) {
    if (typeof v === "string" && k !== "connection" && k !== "keep-alive") out[k] = v;
  }
  return { status: up.statusCode, headers: out, body };
}
