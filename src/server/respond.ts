// Small complete answers, written the same way by every route.
import type { ServerResponse } from "node:http";

/** Writes a complete small response. */
export function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.statusCode = status;
  res.setHeader("Content-Type", contentType);
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}

/** 405 naming the methods the route takes. */
export function methodNotAllowed(res: ServerResponse, allow: readonly string[]): void {
  res.setHeader("Allow", allow.join(", "));
  send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
}
