// Data-plane file read and write against a sandbox's in-memory file system, as its envd version does.
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import { DEFAULT_USER, type EnvdRules, homeOf, resolveFor } from "./envd.js";
import { BodyTooLargeError, readBody, sendError, sendJson } from "./http-io.js";
import type { SimSandbox } from "./model.js";
import { multipartBoundary, parseMultipart } from "./multipart.js";

const MAX_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The user a `/files` request acts as, or false once the refusal is sent: below envd 0.4.0 the
 * generated router refuses a request without `username` (400, plain text); later ones use the
 * default user. An unknown user is envd's 401 `error looking up user`.
 */
function fileUser(rules: EnvdRules, res: ServerResponse, url: URL): string | false {
  const named = url.searchParams.get("username") || undefined;
  if (named === undefined && rules.userRequired) {
    const text = "Query argument username is required, but not found\n";
    res.writeHead(400, {
      "content-type": "text/plain; charset=utf-8",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
    return false;
  }
  const user = named ?? DEFAULT_USER;
  if (homeOf(user) === undefined) {
    sendError(res, 401, `error looking up user '${user}': user: unknown user ${user}`);
    return false;
  }
  return user;
}

/** GET /files?path=: the raw bytes, or 404. */
export function readFile(
  sandbox: SimSandbox,
  rules: EnvdRules,
  res: ServerResponse,
  url: URL,
): void {
  const user = fileUser(rules, res, url);
  if (user === false) return;
  const raw = url.searchParams.get("path");
  if (!raw) {
    sendError(res, 400, "query parameter 'path' is required");
    return;
  }
  const content = sandbox.files.get(resolveFor(user, raw));
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

/** The file a POST /files body carries, or a refusal [status, message], per envd version. */
function uploaded(
  rules: EnvdRules,
  contentType: string,
  body: Buffer,
  path: string | undefined,
): { path: string | undefined; content: Buffer } | [number, string] {
  const media = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (media.startsWith("multipart/")) {
    const boundary = multipartBoundary(contentType);
    const part = boundary
      ? parseMultipart(body, boundary).find((p) => p.name === "file")
      : undefined;
    if (!part) return [400, "multipart body has no part named 'file'"];
    return { path: path ?? part.filename, content: part.data };
  }
  // Before 0.5.7 every body goes to Go's multipart reader, which fails on anything else.
  if (!rules.rawUpload) {
    return [500, "error parsing multipart form: request Content-Type isn't multipart/form-data"];
  }
  if (media === "application/octet-stream") {
    if (path === undefined) return [400, "path query parameter is required for raw body upload"];
    return { path, content: body };
  }
  return [
    400,
    `unsupported content type: ${contentType}, expected multipart/form-data or application/octet-stream`,
  ];
}

/** POST /files?path=: a multipart part `file`, or (envd 0.5.7+) a raw body; answers the written entries. */
export async function writeFile(
  sandbox: SimSandbox,
  rules: EnvdRules,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const user = fileUser(rules, res, url);
  if (user === false) return;
  let body: Buffer;
  try {
    body = await readBody(req, MAX_FILE_BYTES);
  } catch (err) {
    if (err instanceof BodyTooLargeError) return sendError(res, 413, err.message);
    throw err;
  }
  const file = uploaded(
    rules,
    req.headers["content-type"] ?? "",
    body,
    url.searchParams.get("path") || undefined,
  );
  if (Array.isArray(file)) return sendError(res, ...file);
  if (!file.path) return sendError(res, 400, "query parameter 'path' is required");
  const path = resolveFor(user, file.path);
  sandbox.files.set(path, file.content);
  sendJson(res, 200, [{ path, name: posix.basename(path), type: "file" }]);
}
