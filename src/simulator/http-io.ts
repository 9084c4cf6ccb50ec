// Small node:http helpers shared by both simulator servers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/** A JSON body that does not parse: the `malformed` fault. */
const MALFORMED_BODY = '{"sandboxes": [{"sandboxID": "i-trunc';

/** Writes a JSON response. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Writes the platform's error body `{code, message}`. */
export function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { code: status, message });
}

/** Writes 200 with a body that is not valid JSON. */
export function sendMalformed(res: ServerResponse): void {
  res.writeHead(200, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(MALFORMED_BODY),
  });
  res.end(MALFORMED_BODY);
}

/** Thrown by readBody when a request body exceeds its bound. */
export class BodyTooLargeError extends Error {}

/** Reads a whole request body, refusing more than `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.byteLength;
    if (size > maxBytes) throw new BodyTooLargeError(`body larger than ${maxBytes} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** Timeouts that close() can cancel, so a closed simulator leaves no timer behind. */
export class Timers {
  private readonly pending = new Map<NodeJS.Timeout, () => void>();

  /** Resolves true after `ms`, or false if cancelled first. */
  sleep(ms: number): Promise<boolean> {
    if (ms <= 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.pending.delete(t);
        resolve(true);
      }, ms);
      this.pending.set(t, () => resolve(false));
    });
  }

  /** Cancels every pending sleep. */
  cancelAll(): void {
    for (const [t, cancel] of this.pending) {
      clearTimeout(t);
      cancel();
    }
    this.pending.clear();
  }
}

/** Whether the request carries `key` as X-API-Key or as a bearer token. */
export function hasApiKey(req: IncomingMessage, key: string): boolean {
  if (req.headers["x-api-key"] === key) return true;
  return req.headers.authorization === `Bearer ${key}`;
}

/** A keep-alive loopback server whose handler failures become a 500 (or a dropped stream). */
export function createSimServer(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Server {
  const server = createServer({ keepAlive: true, noDelay: true }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else sendError(res, 500, err instanceof Error ? err.message : "internal error");
    });
  });
  server.keepAliveTimeout = 30_000;
  return server;
}
