// Sandbox ports other than the agent's, as E2B's proxy serves them: the HTTP services a sandbox
// runs (`python -m http.server`), the proxy's own answers (closed port, not found, traffic token;
// infra packages/shared/pkg/proxy/template), and auto-resume on traffic (client-proxy
// catalogResolution, api HandleExistingSandboxAutoResume).
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import type { SimContext } from "./context.js";
import type { SimProcess, SimSandbox } from "./model.js";
import { resumePaused } from "./sandbox-routes.js";

/** The port of the in-sandbox agent (E2B envd); every other port is a service's. */
export const ENVD_PORT = 49_983;
/** Header the proxy reads a restricted sandbox's traffic token from. */
export const TRAFFIC_TOKEN_HEADER = "e2b-traffic-access-token";
/** E2B's minimum time to live of a sandbox woken by traffic (featureflags minimum-autoresume-timeout). */
const AUTO_RESUME_MIN_TIMEOUT_MS = 300_000;
const BROWSER = /mozilla|chrome|safari|firefox|edge|opera|msie/i;

/** One of the proxy's own answers. */
export type ProxyAnswerKind = "port_closed" | "not_found" | "token_missing" | "token_invalid";

/** What the proxy's template.go answers: its JSON (field order as Go marshals it), or HTML to a browser. */
export function sendProxyAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  kind: ProxyAnswerKind,
  sandboxId: string,
  port: number,
): void {
  const [status, title, body] = answerOf(kind, sandboxId, port);
  if (wantsHtml(req)) {
    const html = `<html lang="en">\n<head><meta charset="UTF-8"><title>${title}</title></head>\n<body><p>${escapeHtml(String(body.message))}</p><p>${escapeHtml(req.headers.host ?? "")}</p></body>\n</html>\n`;
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "content-length": Buffer.byteLength(html),
    });
    res.end(html);
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

function answerOf(
  kind: ProxyAnswerKind,
  sandboxId: string,
  port: number,
): [number, string, Record<string, unknown>] {
  switch (kind) {
    case "port_closed":
      return [
        502,
        "Closed Port Error",
        { sandboxId, message: "The sandbox is running but port is not open", port, code: 502 },
      ];
    case "not_found":
      return [
        502,
        "Sandbox Not Found",
        { sandboxId, message: "The sandbox was not found", code: 502 },
      ];
    case "token_missing":
      return [
        403,
        "Missing Traffic Access Token",
        {
          sandboxId,
          message: `Sandbox is secured with traffic access token. Token header '${TRAFFIC_TOKEN_HEADER}' is missing`,
          code: 403,
        },
      ];
    case "token_invalid":
      return [
        403,
        "Invalid Traffic Access Token",
        {
          sandboxId,
          message: `Sandbox is secured with traffic access token. Provided token in header '${TRAFFIC_TOKEN_HEADER}' is invalid`,
          code: 403,
        },
      ];
  }
}

/** template.go wantsHtml: intent (Accept, Sec-Fetch-Mode, X-Requested-With) first, then the User-Agent. */
function wantsHtml(req: IncomingMessage): boolean {
  const accept = String(req.headers.accept ?? "").toLowerCase();
  if (accept.includes("application/json") && !accept.includes("text/html")) return false;
  const mode = String(req.headers["sec-fetch-mode"] ?? "").toLowerCase();
  if (["cors", "no-cors", "same-origin", "websocket"].includes(mode)) return false;
  if (mode !== "navigate" && req.headers["x-requested-with"] !== undefined) return false;
  return BROWSER.test(String(req.headers["user-agent"] ?? ""));
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The token check of the orchestrator's proxy (non-envd ports of a restricted sandbox only). */
function tokenRefusal(sandbox: SimSandbox, req: IncomingMessage): ProxyAnswerKind | undefined {
  if (sandbox.trafficToken === undefined) return undefined;
  const sent = req.headers[TRAFFIC_TOKEN_HEADER];
  if (sent === undefined || sent === "") return "token_missing";
  return sent === sandbox.trafficToken ? undefined : "token_invalid";
}

/**
 * A request to a service port of `sandbox`: a paused sandbox created with auto-resume is woken
 * (after the `wakeDelayMs` knob), any other is not found; a running one answers through the
 * process serving the port, or with the proxy's closed-port answer.
 */
export async function servePort(
  ctx: SimContext,
  sandbox: SimSandbox,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const id = sandbox.sandboxID;
  const knobs = ctx.faults.lifecycle;
  if (sandbox.state === "paused") {
    if (!sandbox.autoResume) return sendProxyAnswer(req, res, "not_found", id, port);
    // Before infra#2196, traffic reaching a sandbox still pausing got the proxy's 502.
    const window = knobs.autoResumeNotFoundForMs;
    const since = sandbox.pausedAt === undefined ? Infinity : ctx.clock.now() - sandbox.pausedAt;
    if (window !== undefined && since < window)
      return sendProxyAnswer(req, res, "not_found", id, port);
    // The API lets traffic resume a restricted sandbox only with its token (ResumeSandbox).
    const refused = tokenRefusal(sandbox, req);
    if (refused) return sendProxyAnswer(req, res, refused, id, port);
    if (knobs.wakeDelayMs !== undefined && !(await ctx.timers.sleep(knobs.wakeDelayMs))) return;
    if (sandbox.state !== "paused") {
      // Woken meanwhile by another request.
    } else if (resumePaused(ctx, sandbox) !== undefined) {
      return sendProxyAnswer(req, res, "not_found", id, port);
    } else {
      sandbox.endAt = Math.max(sandbox.endAt, ctx.clock.now() + AUTO_RESUME_MIN_TIMEOUT_MS);
    }
  }
  if (sandbox.state !== "running") return sendProxyAnswer(req, res, "not_found", id, port);
  const refused = tokenRefusal(sandbox, req);
  if (refused) return sendProxyAnswer(req, res, refused, id, port);
  const server = serving(ctx, sandbox, port);
  if (!server?.serves) return sendProxyAnswer(req, res, "port_closed", id, port);
  serveFiles(sandbox, server.serves.dir, req, res, url);
}

/** The live process serving `port`, if any. */
export function serving(
  ctx: SimContext,
  sandbox: SimSandbox,
  port: number,
): SimProcess | undefined {
  const now = ctx.clock.now();
  for (const p of sandbox.processes.values())
    if (p.serves?.port === port && (p.endsAt === undefined || now < p.endsAt)) return p;
  return undefined;
}

/** Python's http.server (SimpleHTTPRequestHandler) over the sandbox's files: GET and HEAD. */
function serveFiles(
  sandbox: SimSandbox,
  dir: string,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): void {
  const method = req.method ?? "GET";
  if (method !== "GET" && method !== "HEAD") {
    pyError(res, 501, `Unsupported method ('${method}')`, method);
    return;
  }
  const rel = decodeURIComponent(url.pathname);
  const path = posix.join(dir, rel);
  const file = sandbox.files.get(path);
  if (file !== undefined && !rel.endsWith("/")) {
    res.writeHead(200, {
      server: "SimpleHTTP/0.6 Python/3.11.6",
      "content-type": contentType(path),
      "content-length": file.byteLength,
    });
    res.end(method === "HEAD" ? undefined : file);
    return;
  }
  const prefix = path.endsWith("/") ? path : `${path}/`;
  const names = [...sandbox.files.keys()]
    .filter((p) => p.startsWith(prefix))
    .map((p) => p.slice(prefix.length).split("/")[0] as string);
  if (names.length === 0) {
    pyError(res, 404, "File not found", method);
    return;
  }
  const index = sandbox.files.get(`${prefix}index.html`);
  const body =
    index ??
    Buffer.from(
      `<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Directory listing for ${rel}</title>\n</head>\n<body>\n<h1>Directory listing for ${rel}</h1>\n<hr>\n<ul>\n${[...new Set(names)].map((n) => `<li><a href="${n}">${n}</a></li>`).join("\n")}\n</ul>\n<hr>\n</body>\n</html>\n`,
    );
  res.writeHead(200, {
    server: "SimpleHTTP/0.6 Python/3.11.6",
    "content-type": "text/html; charset=utf-8",
    "content-length": body.byteLength,
  });
  res.end(method === "HEAD" ? undefined : body);
}

function contentType(path: string): string {
  if (path.endsWith(".html")) return "text/html";
  if (path.endsWith(".json")) return "application/json";
  if (path.endsWith(".txt")) return "text/plain";
  return "application/octet-stream";
}

/** http.server's send_error page. */
function pyError(res: ServerResponse, status: number, message: string, method: string): void {
  const body = `<!DOCTYPE HTML>\n<html lang="en">\n    <head>\n        <meta charset="utf-8">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: ${status}</p>\n        <p>Message: ${message}.</p>\n    </body>\n</html>\n`;
  res.writeHead(status, {
    server: "SimpleHTTP/0.6 Python/3.11.6",
    "content-type": "text/html;charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(method === "HEAD" ? undefined : body);
}
