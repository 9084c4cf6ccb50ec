// The hostile in-sandbox agent behind a data-plane proxy port: routes by `Host:
// {port}-{sandboxId}.{domain}`, serves Connect-streamed process.Process/Start and /files, and
// the stream faults (a lying length prefix, a gzip bomb frame, endless keepalives, no trailer,
// an end event echoing the request headers).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import {
  type Fault,
  gzipMember,
  json,
  MAX_HOLD_MS,
  pause,
  send,
  serveFault,
  write,
} from "./faults.js";
import { AGENT_PORT, type Route, readBody, type Upstream } from "./upstream.js";

const FLAG_COMPRESSED = 0x01;
const FLAG_END_STREAM = 0x02;
const MAX_KEEPALIVES = 5_000;
const CONNECT_JSON = "application/connect+json";

/** One Connect envelope: flags, 4-byte big-endian length, payload. */
export function frame(flags: number, payload: Buffer | string): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

const event = (e: unknown): Buffer => frame(0, JSON.stringify({ event: e }));
const START = event({ start: { pid: 4242 } });
const END_OK = event({ end: { exited: true, status: "exit status 0" } });
const END_STREAM = frame(FLAG_END_STREAM, "{}");
const KEEPALIVE = event({ keepalive: {} });

/** The command of a Start request body (one envelope holding the StartRequest JSON). */
function commandOf(body: Buffer): string {
  if (body.length < 5) return "";
  try {
    const req = JSON.parse(body.subarray(5, 5 + body.readUInt32BE(1)).toString("utf8")) as {
      process?: { args?: string[] };
    };
    return req.process?.args?.[2] ?? "";
  } catch {
    return "";
  }
}

/** What `echo X` prints. */
function stdoutOf(command: string): string {
  return command.startsWith("echo ") ? `${command.slice(5)}\n` : "";
}

/** The content of the part named "file" of a multipart/form-data body. */
function filePart(body: Buffer, contentType: string): Buffer | undefined {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return undefined;
  const named = body.indexOf('name="file"');
  if (named < 0) return undefined;
  const start = body.indexOf("\r\n\r\n", named);
  const end = body.indexOf(`\r\n--${boundary}`, start);
  return start < 0 || end < 0 ? undefined : body.subarray(start + 4, end);
}

/** The request headers as a debugging agent dumps them into an error: `name: value; ...`. */
function headerDump(req: IncomingMessage): string {
  return Object.entries(req.headers)
    .map(([name, value]) => `${name}: ${String(value)}`)
    .join("; ");
}

async function serveStream(
  req: IncomingMessage,
  res: ServerResponse,
  fault: Fault | undefined,
  out: string,
) {
  const data = event({ data: { stdout: Buffer.from(out).toString("base64") } });
  const headers: Record<string, string> = { "content-type": CONNECT_JSON };
  switch (fault?.kind) {
    case "echo": {
      // The process "fails" and the end event's error echoes the request, X-Access-Token included.
      const error = `request was ${headerDump(req)}`;
      const end = event({ end: { exited: true, exitCode: 1, status: "exit status 1", error } });
      res.writeHead(200, headers);
      res.end(Buffer.concat([START, data, end, END_STREAM]));
      return;
    }
    case "envelopeHugeLength": {
      res.writeHead(200, headers);
      const head = Buffer.from([0, 0xff, 0xff, 0xff, 0xff]);
      res.end(Buffer.concat([head, Buffer.alloc(16, 0x7b)]));
      return;
    }
    case "envelopeGzipBomb":
      res.writeHead(200, { ...headers, "connect-content-encoding": "gzip" });
      res.end(Buffer.concat([START, frame(FLAG_COMPRESSED, gzipMember()), END_STREAM]));
      return;
    case "endlessKeepalives": {
      res.writeHead(200, headers);
      const deadline = Date.now() + MAX_HOLD_MS;
      if (!(await write(res, START))) return;
      for (let i = 0; i < MAX_KEEPALIVES && Date.now() < deadline; i++) {
        if (!(await write(res, KEEPALIVE))) return;
        await pause(res, fault.everyMs ?? 20);
      }
      res.destroy();
      return;
    }
    case "noEndOfStream":
      res.writeHead(200, headers);
      res.end(Buffer.concat([START, data, END_OK]));
      return;
    default:
      res.writeHead(200, headers);
      res.end(Buffer.concat([START, data, END_OK, END_STREAM]));
  }
}

/** Starts the agent's proxy port on 127.0.0.1; it shares faults and counters with `up`. */
export async function startAgent(up: Upstream): Promise<Server> {
  const escaped = up.domain.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const hostRe = new RegExp(`^(\\d+)-(.+)\\.${escaped}(?::\\d+)?$`);
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://agent");
    const body = await readBody(req);
    for (const v of Object.values(req.headers))
      if (String(v).includes(up.o.apiKey)) up.apiKeyOnDataPlane++;
    const route = `${req.method} ${url.pathname}` as Route;
    if (!["POST /process.Process/Start", "GET /files", "POST /files"].includes(route))
      return send(res, json(404, { code: "not_found", message: "no such agent route" }));
    up.hit(route);
    const host = hostRe.exec(req.headers.host ?? "");
    const id = host?.[2] ?? "";
    if (!host || Number(host[1]) !== AGENT_PORT || !up.fleet.sandboxes.has(id))
      return send(res, json(502, { code: "unavailable", message: "no such sandbox" }));
    const fault = up.takeFault(route, url);
    if (route === "POST /process.Process/Start") {
      // An echo without a status is echoed inside the stream (see serveStream).
      const inStream = fault?.kind === "echo" && fault.status === undefined;
      const generic =
        fault &&
        !inStream &&
        !fault.kind.startsWith("envelope") &&
        fault.kind !== "endlessKeepalives" &&
        fault.kind !== "noEndOfStream";
      if (fault && generic) return serveFault(req, res, fault, () => json(200, {}));
      return serveStream(req, res, fault, stdoutOf(commandOf(body)));
    }
    const files = up.files.get(id) ?? new Map<string, Buffer>();
    up.files.set(id, files);
    const path = url.searchParams.get("path") ?? "";
    const normal = (): {
      status: number;
      body: Buffer | string;
      headers?: Record<string, string>;
    } => {
      if (route === "GET /files") {
        const content = files.get(path);
        return content
          ? { status: 200, body: content, headers: { "content-type": "application/octet-stream" } }
          : json(404, { code: 404, message: `path '${path}' does not exist` });
      }
      const content = filePart(body, String(req.headers["content-type"] ?? ""));
      if (!content) return json(400, { code: 400, message: "no part named 'file'" });
      files.set(path, Buffer.from(content));
      return json(200, [{ path, name: path.split("/").pop(), type: "file" }]);
    };
    if (fault) return serveFault(req, res, fault, normal);
    return send(res, normal());
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
