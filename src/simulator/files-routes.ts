// Data-plane file read and write against a sandbox's in-memory file system.
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import { BodyTooLargeError, readBody, sendError, sendJson } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { multipartBoundary, parseMultipart } from "./multipart.js";

/** Relative paths resolve against the sandbox user's home, as envd does. */
export const HOME_DIR = "/home/user";
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** GET /files?path=: the raw bytes, or 404. */
export function readFile(sandbox: SimSandbox, res: ServerResponse, url: URL): void {
  const raw = url.searchParams.get("path");
  if (!raw) {
    sendError(res, 400, "query parameter 'path' is required");
    return;
  }
  const content = sandbox.files.get(posix.resolve(HOME_DIR, raw));
  if (content === undefined) {
    sendError(res, 404, `path '${raw}' does not exist`);
    return;
  }
  res.writeHead(200, {
    "content-type": "application/octet-stream",
    "content-length": content.byteLength,
  });
  res.end(content);
}

/** POST /files?path=: multipart part `file` or a raw octet-stream body; answers the written entries. */
export async function writeFile(
  sandbox: SimSandbox,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  let body: Buffer;
  try {
    body = await readBody(req, MAX_FILE_BYTES);
  } catch (err) {
    if (err instanceof BodyTooLargeError) return sendError(res, 413, err.message);
    throw err;
  }
  const contentType = req.headers["content-type"] ?? "application/octet-stream";
  let target = url.searchParams.get("path") ?? undefined;
  let content: Buffer;
  if (contentType.toLowerCase().startsWith("multipart/form-data")) {
    const boundary = multipartBoundary(contentType);
    const part = boundary
      ? parseMultipart(body, boundary).find((p) => p.name === "file")
      : undefined;
    if (!part) return sendError(res, 400, "multipart body has no part named 'file'");
    target ??= part.filename;
    content = part.data;
  } else if (contentType.toLowerCase().startsWith("application/octet-stream")) {
    content = body;
  } else {
    return sendError(res, 400, `unsupported content type '${contentType}'`);
  }
  if (!target) return sendError(res, 400, "query parameter 'path' is required");
  const path = posix.resolve(HOME_DIR, target);
  sandbox.files.set(path, content);
  sendJson(res, 200, [{ path, name: posix.basename(path), type: "file" }]);
}
