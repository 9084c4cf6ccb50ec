// What a hostile route may do instead of answering well, and how each misbehaviour is served.
// Every loop here is bounded in count and in time, and stops as soon as the client hangs up.
import type { IncomingMessage, ServerResponse } from "node:http";
import { gzipSync } from "node:zlib";

/** Misbehaviours of a route; the stream ones only apply to process.Process/Start. */
export type Fault =
  /** This status and body (default a JSON error), with a Retry-After header when given. */
  | { kind: "status"; status: number; body?: string; contentType?: string; retryAfter?: string }
  /** Never answer; the socket stays open until the client gives up. */
  | { kind: "hang" }
  /** Headers at once, then one body byte per `everyMs` (default 100 ms). */
  | { kind: "slowLoris"; everyMs?: number }
  /** A 200 JSON answer cut in the middle of a record. */
  | { kind: "malformedJson" }
  /** An HTML error page (a proxy's or load balancer's), status 200 unless given. */
  | { kind: "html"; status?: number }
  /** A 200 JSON body of `bytes` bytes (an array padded with whitespace). */
  | { kind: "oversized"; bytes: number }
  /** Content-Encoding: gzip of 1 GiB of zeros (about 1 MB on the wire). */
  | { kind: "gzipBomb" }
  /** Headers and part of the body, then a TCP reset. */
  | { kind: "resetMidBody" }
  /** `[[[...]]]` nested `depth` levels. */
  | { kind: "deepNesting"; depth: number }
  /** The answer encoded as UTF-16 with a byte-order mark: not UTF-8 at all. */
  | { kind: "utf16Body" }
  /** Any body with any status and content type. */
  | { kind: "body"; status?: number; contentType?: string; body: string | Buffer }
  /**
   * The request headers (API key included) echoed in the body: with `status`, as the whole
   * answer; without, merged into the route's normal answer (JSON), or as plain text with `text`.
   */
  | { kind: "echo"; status?: number; text?: boolean }
  /** Stream: a frame header declaring 0xFFFFFFFF payload bytes. */
  | { kind: "envelopeHugeLength" }
  /** Stream: a compressed frame that inflates to 64 MiB of zeros. */
  | { kind: "envelopeGzipBomb" }
  /** Stream: a start event, then keepalives forever, never an end. */
  | { kind: "endlessKeepalives"; everyMs?: number }
  /** Stream: start, data and end events, then the body closes without the end-of-stream frame. */
  | { kind: "noEndOfStream" };

/** A finished answer of a route. */
export interface Reply {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** Longest a hanging or dripping answer is kept open, whatever the client does. */
const MAX_HOLD_MS = 30_000;
const SLOW_LORIS_MAX_BYTES = 300;
const OVERSIZE_CHUNK = 1024 * 1024;
const BOMB_MEMBER_BYTES = 64 * 1024 * 1024;
const BOMB_MEMBERS = 16;
const RESET_DECLARED_BYTES = 100_000;

export function json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return {
    status,
    body: JSON.stringify(value),
    headers: { "content-type": "application/json", ...headers },
  };
}

export function send(res: ServerResponse, r: Reply): void {
  const body = typeof r.body === "string" ? Buffer.from(r.body, "utf8") : r.body;
  res.writeHead(r.status, { ...r.headers, "content-length": String(body.length) });
  res.end(body);
}

let member: Buffer | undefined;

/** 1 GiB of zeros as 16 concatenated gzip members of 64 MiB (RFC 1952 allows members in a row). */
export function gzipBomb(): Buffer {
  member ??= gzipSync(Buffer.alloc(BOMB_MEMBER_BYTES), { level: 9 });
  return Buffer.concat(Array.from({ length: BOMB_MEMBERS }, () => member as Buffer));
}

/** The deflated payload of `gzipBomb`'s one member: 64 MiB of zeros in about 64 KB. */
export function gzipMember(): Buffer {
  gzipBomb();
  return member as Buffer;
}

/** True once the client is gone (or the upstream closed the socket). */
function gone(res: ServerResponse): boolean {
  return res.destroyed || res.socket === null || res.socket.destroyed;
}

/** Resolves after `ms`, or at once when the client is gone. */
function pause(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    res.once("close", done);
    function done(): void {
      clearTimeout(t);
      res.off("close", done);
      resolve();
    }
  });
}

/** Writes `chunk` and waits for the socket to drain; false when the client is gone. */
async function write(res: ServerResponse, chunk: string | Buffer): Promise<boolean> {
  if (gone(res)) return false;
  if (res.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
  return !gone(res);
}

/** The header lines of a request, the key-carrying ones first (as a debugging proxy dumps them). */
export function headerDump(req: IncomingMessage): string {
  const lines: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
    lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  const secretFirst = (l: string): number => (/^(x-api-key|authorization):/i.test(l) ? 0 : 1);
  return lines.sort((a, b) => secretFirst(a) - secretFirst(b)).join("\n");
}

/** The echo fields merged into records: httpbin-style `headers`, a dumped line and the bare key. */
function echoFields(req: IncomingMessage): Record<string, unknown> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) headers[k] = String(v);
  const keyLine = headerDump(req).split("\n")[0] ?? "";
  const key = String(req.headers["x-api-key"] ?? req.headers.authorization ?? "");
  return { headers, echo: keyLine, requestedBy: key, debug: { caller: key, line: keyLine } };
}

/** `value` with the echo merged into it: into every record of a list, and into metadata. */
function withEcho(value: unknown, fields: Record<string, unknown>): unknown {
  const line = fields.echo as string;
  const record = (o: Record<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = { ...o, ...fields };
    if (typeof o.metadata === "object" && o.metadata !== null)
      out.metadata = { ...(o.metadata as Record<string, string>), echo: line };
    for (const [k, v] of Object.entries(o))
      if (Array.isArray(v)) out[k] = v.map((x) => withEcho(x, fields));
    return out;
  };
  if (Array.isArray(value)) return value.map((x) => withEcho(x, fields));
  if (typeof value === "object" && value !== null) return record(value as Record<string, unknown>);
  return { ...fields, value };
}

/** The echo answer: see the `echo` fault. */
function echoReply(
  req: IncomingMessage,
  fault: Extract<Fault, { kind: "echo" }>,
  normal: () => Reply,
): Reply {
  const fields = echoFields(req);
  if (fault.text)
    return {
      status: fault.status ?? 200,
      body: headerDump(req),
      headers: { "content-type": "text/plain" },
    };
  if (fault.status !== undefined)
    return json(fault.status, { code: fault.status, message: "echo", ...fields });
  const r = normal();
  const text = typeof r.body === "string" ? r.body : r.body.toString("utf8");
  let value: unknown = null;
  try {
    value = text.trim() === "" ? null : JSON.parse(text);
  } catch {
    value = text;
  }
  // A 204 has no body to echo into: a 200 with the echo instead.
  const status = r.status === 204 ? 200 : r.status;
  return json(status, withEcho(value, fields), { ...(r.headers ?? {}) });
}

/** Serves one of the generic faults; `normal` builds the route's good answer (only echo uses it). */
export async function serveFault(
  req: IncomingMessage,
  res: ServerResponse,
  fault: Fault,
  normal: () => Reply,
): Promise<void> {
  switch (fault.kind) {
    case "status":
      return send(res, {
        status: fault.status,
        body: fault.body ?? JSON.stringify({ code: fault.status, message: "chaos" }),
        headers: {
          "content-type": fault.contentType ?? "application/json",
          ...(fault.retryAfter !== undefined ? { "retry-after": fault.retryAfter } : {}),
        },
      });
    case "hang":
      await pause(res, MAX_HOLD_MS);
      res.destroy();
      return;
    case "slowLoris": {
      res.writeHead(200, { "content-type": "application/json" });
      const every = fault.everyMs ?? 100;
      const deadline = Date.now() + MAX_HOLD_MS;
      for (let i = 0; i < SLOW_LORIS_MAX_BYTES && Date.now() < deadline; i++) {
        if (!(await write(res, i === 0 ? "[" : " "))) return;
        await pause(res, every);
      }
      res.destroy();
      return;
    }
    case "malformedJson":
      return send(res, {
        status: 200,
        body: '[{"sandboxID":"sb-cut","templateID":"base","state":"runn',
        headers: { "content-type": "application/json" },
      });
    case "html":
      return send(res, {
        status: fault.status ?? 200,
        body: "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><h1>Bad Gateway</h1><p>The upstream is taking a nap.</p></body></html>\n",
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    case "oversized": {
      res.writeHead(200, { "content-type": "application/json" });
      const pad = Buffer.alloc(OVERSIZE_CHUNK, 0x20);
      if (!(await write(res, "["))) return;
      for (let sent = 1; sent < fault.bytes - 1; sent += pad.length)
        if (!(await write(res, pad))) return;
      res.end("]");
      return;
    }
    case "gzipBomb":
      return send(res, {
        status: 200,
        body: gzipBomb(),
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
      });
    case "resetMidBody": {
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": String(RESET_DECLARED_BYTES),
      });
      const part = `[${'{"sandboxID":"sb-half","templateID":"base","state":"running"},'.repeat(80)}`;
      await write(res, part);
      // Let the headers and the part leave before the reset.
      await pause(res, 20);
      res.socket?.resetAndDestroy();
      return;
    }
    case "deepNesting":
      return send(res, {
        status: 200,
        body: "[".repeat(fault.depth) + "]".repeat(fault.depth),
        headers: { "content-type": "application/json" },
      });
    case "utf16Body": {
      const r = normal();
      const text = typeof r.body === "string" ? r.body : r.body.toString("utf8");
      return send(res, {
        status: r.status,
        body: Buffer.from(`\ufeff${text}`, "utf16le"),
        headers: { ...(r.headers ?? {}), "content-type": "application/json; charset=utf-16" },
      });
    }
    case "body":
      return send(res, {
        status: fault.status ?? 200,
        body: fault.body,
        headers: { "content-type": fault.contentType ?? "application/json" },
      });
    case "echo":
      return send(res, echoReply(req, fault, normal));
    default:
      // Stream faults on a route without a stream: answer like a broken proxy would.
      return send(res, { status: 502, body: "stream fault on a non-stream route" });
  }
}

export { MAX_HOLD_MS, pause, write };
