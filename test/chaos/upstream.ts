// A hostile platform written apart from the project's simulator: the management API under
// /sandboxapi/v1 and POST /sandboxes on one node:http server, the in-sandbox agent on another
// (see agent.ts), both on 127.0.0.1:0, with a fault switch per route flipped at run time.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { startAgent } from "./agent.js";
import { type Fault, json, type Reply, send, serveFault } from "./faults.js";
import { type Fleet, type FleetSandbox, PROBE_TAG, sandboxJson } from "./fleet.js";

export const PREFIX = "/sandboxapi/v1";
/** The agent port in data-plane host names (E2B envd). */
export const AGENT_PORT = 49983;
const DEFAULT_PAGE_CAP = 100;
const MAX_REQUEST_BYTES = 1024 * 1024;
/** Items two overlapping pages share in "duplicates" paging. */
const OVERLAP = 7;
/** The one token "repeatToken" paging hands out, page after page. */
const REPEATED = "o-forever";

/** Routes of both servers, as the fault switch names them. */
export type Route =
  | "GET /health"
  | "GET /cluster/overview"
  | "GET /nodes"
  | "GET /nodes/{id}"
  | "GET /templates"
  | "GET /templates/{id}"
  | "GET /v2/sandboxes"
  | "GET /sandboxes/{id}"
  | "GET /sandboxes/metrics"
  | "DELETE /sandboxes/{id}"
  | "POST /sandboxes/{id}/pause"
  | "POST /sandboxes/{id}/resume"
  | "GET /v2/sandboxes/{id}/logs"
  | "POST /sandboxes"
  | "POST /process.Process/Start"
  | "GET /files"
  | "POST /files";

export const MANAGEMENT_ROUTES: readonly Route[] = [
  "GET /health",
  "GET /cluster/overview",
  "GET /nodes",
  "GET /nodes/{id}",
  "GET /templates",
  "GET /templates/{id}",
  "GET /v2/sandboxes",
  "GET /sandboxes/{id}",
  "DELETE /sandboxes/{id}",
  "POST /sandboxes/{id}/pause",
  "POST /sandboxes/{id}/resume",
  "GET /v2/sandboxes/{id}/logs",
  "POST /sandboxes",
];

/** How /v2/sandboxes pages misbehave. */
export type Paging = "normal" | "repeatToken" | "endlessTokens" | "duplicates";

/** A fault switched on for a route. */
interface Armed {
  fault: Fault;
  /** Requests left to spoil; undefined = until cleared. */
  times: number | undefined;
  /** Only requests this accepts are spoiled. */
  when: ((url: URL) => boolean) | undefined;
}

const MATCHERS: Array<[string, RegExp, Route]> = [
  ["GET", /^\/health$/, "GET /health"],
  ["GET", /^\/cluster\/overview$/, "GET /cluster/overview"],
  ["GET", /^\/nodes$/, "GET /nodes"],
  ["GET", /^\/nodes\/([^/]+)$/, "GET /nodes/{id}"],
  ["GET", /^\/templates$/, "GET /templates"],
  ["GET", /^\/templates\/([^/]+)$/, "GET /templates/{id}"],
  ["GET", /^\/v2\/sandboxes$/, "GET /v2/sandboxes"],
  ["GET", /^\/v2\/sandboxes\/([^/]+)\/logs$/, "GET /v2/sandboxes/{id}/logs"],
  ["GET", /^\/sandboxes\/(metrics)$/, "GET /sandboxes/metrics"],
  ["GET", /^\/sandboxes\/([^/]+)$/, "GET /sandboxes/{id}"],
  ["DELETE", /^\/sandboxes\/([^/]+)$/, "DELETE /sandboxes/{id}"],
  ["POST", /^\/sandboxes\/([^/]+)\/pause$/, "POST /sandboxes/{id}/pause"],
  ["POST", /^\/sandboxes\/([^/]+)\/resume$/, "POST /sandboxes/{id}/resume"],
];

/** Settings of the upstream. */
export interface UpstreamOptions {
  apiKey: string;
  fleet: Fleet;
  /** Sandbox domain of data-plane host names. */
  domain?: string;
  /** Largest page the list serves whatever `limit` asks. */
  pageCap?: number;
}

/** The running hostile platform. */
export class Upstream {
  readonly fleet: Fleet;
  readonly domain: string;
  apiUrl = "";
  dataPort = 0;
  paging: Paging = "normal";
  listOrder: "id" | "started" = "id";
  /** Created sandboxes report a start this long before their creation (they look like old orphans). */
  createdAgeMs = 0;
  /** Every id POST /sandboxes created, in order. */
  readonly created: string[] = [];
  /** Every id a DELETE removed, in order. */
  readonly deleted: string[] = [];
  /** Requests per route, faulty ones included. */
  readonly counts = new Map<Route, number>();
  /** Requests without the right API key (the harness is miswired when this is not 0). */
  unauthorized = 0;
  /** Data-plane requests that carried the management API key (it must never go there). */
  apiKeyOnDataPlane = 0;
  /** Files written through the agent, per sandbox. */
  readonly files = new Map<string, Map<string, Buffer>>();
  private readonly faults = new Map<Route, Armed>();
  private readonly sockets = new Set<Socket>();
  private readonly servers: Server[] = [];
  private createdCount = 0;

  constructor(readonly o: UpstreamOptions) {
    this.fleet = o.fleet;
    this.domain = o.domain ?? "chaos.test";
  }

  /** Spoils the route's answers with `fault` (the next `times` requests only, when given). */
  fault(route: Route, fault: Fault, opts: { times?: number; when?: (url: URL) => boolean } = {}) {
    this.faults.set(route, { fault, times: opts.times, when: opts.when });
  }

  /** Every route answers well again; paging goes back to normal. */
  clearFaults(): void {
    this.faults.clear();
    this.paging = "normal";
  }

  count(route: Route): number {
    return this.counts.get(route) ?? 0;
  }

  /** Ids of live sandboxes carrying the probe tag. */
  probeSandboxes(): string[] {
    return [...this.fleet.sandboxes.values()]
      .filter((s) => s.metadata[PROBE_TAG] !== undefined)
      .map((s) => s.sandboxID);
  }

  /** The fault to apply to this request, if any (consumes one of its `times`). */
  takeFault(route: Route, url: URL): Fault | undefined {
    const armed = this.faults.get(route);
    if (!armed || (armed.when && !armed.when(url))) return undefined;
    if (armed.times !== undefined) {
      if (armed.times <= 0) return undefined;
      armed.times--;
    }
    return armed.fault;
  }

  /** Counts a request of `route`. */
  hit(route: Route): void {
    this.counts.set(route, this.count(route) + 1);
  }

  /** Keeps a server's sockets so close() can cut hanging answers. */
  track(server: Server): void {
    this.servers.push(server);
    server.on("connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await Promise.all(
      this.servers.map(
        (srv) =>
          new Promise<void>((resolve) => {
            srv.closeAllConnections();
            srv.close(() => resolve());
          }),
      ),
    );
  }

  /** The management API's handler. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://upstream");
    const body = await readBody(req);
    const matched = this.match(req.method ?? "GET", url.pathname);
    if (!matched) return send(res, json(404, { code: 404, message: `no route ${url.pathname}` }));
    const { route, id } = matched;
    this.hit(route);
    if (req.headers["x-api-key"] !== this.o.apiKey) {
      this.unauthorized++;
      return send(res, json(401, { code: 401, message: "missing or wrong API key" }));
    }
    const normal = (): Reply => this.answer(route, id, url, body);
    const fault = this.takeFault(route, url);
    if (fault) return serveFault(req, res, fault, normal);
    return send(res, normal());
  }

  private match(method: string, path: string): { route: Route; id: string } | undefined {
    if (method === "POST" && path === "/sandboxes") return { route: "POST /sandboxes", id: "" };
    if (!path.startsWith(`${PREFIX}/`)) return undefined;
    const rest = path.slice(PREFIX.length);
    for (const [m, re, route] of MATCHERS) {
      const hit = method === m ? re.exec(rest) : null;
      if (hit) return { route, id: decodeURIComponent(hit[1] ?? "") };
    }
    return undefined;
  }

  /** The good answer of a route (with its side effects: create, delete, pause, resume). */
  private answer(route: Route, id: string, url: URL, body: Buffer): Reply {
    const f = this.fleet;
    const sb = f.sandboxes.get(id);
    const missing = json(404, { code: 404, message: `sandbox ${id} not found` });
    switch (route) {
      case "GET /health":
        return json(200, f.health);
      case "GET /cluster/overview":
        return json(200, f.overview);
      case "GET /nodes":
        return json(200, f.nodes);
      case "GET /nodes/{id}": {
        const n = f.nodes.find((x) => x.nodeID === id);
        return n ? json(200, n) : json(404, { code: 404, message: "node not found" });
      }
      case "GET /templates":
        return json(200, f.templates);
      case "GET /templates/{id}": {
        const t = f.templates.find((x) => x.templateID === id);
        return t ? json(200, t) : json(404, { code: 404, message: "template not found" });
      }
      case "GET /v2/sandboxes":
        return this.page(url);
      case "GET /sandboxes/{id}":
        return sb ? json(200, sandboxJson(sb)) : missing;
      case "GET /sandboxes/metrics":
        return this.usage(url);
      case "DELETE /sandboxes/{id}":
        if (!sb) return missing;
        f.sandboxes.delete(id);
        f.raw.delete(id);
        this.files.delete(id);
        this.deleted.push(id);
        return { status: 204, body: "" };
      case "POST /sandboxes/{id}/pause":
        if (!sb) return missing;
        if (sb.state === "paused") return json(409, { code: 409, message: "already paused" });
        sb.state = "paused";
        return { status: 204, body: "" };
      case "POST /sandboxes/{id}/resume":
        if (!sb) return missing;
        sb.state = "running";
        return json(201, sandboxJson(sb));
      case "GET /v2/sandboxes/{id}/logs": {
        if (!sb) return missing;
        const at = new Date(sb.lastLogAt ?? sb.startedAt).toISOString();
        return json(200, { logs: [{ timestamp: at, message: "working", level: "info" }] });
      }
      case "POST /sandboxes":
        return this.create(body);
      default:
        return json(404, { code: 404, message: "not a management route" });
    }
  }

  private create(body: Buffer): Reply {
    let req: { templateID?: unknown; metadata?: unknown };
    try {
      req = JSON.parse(body.toString("utf8")) as typeof req;
    } catch {
      return json(400, { code: 400, message: "body is not JSON" });
    }
    const id = `probe-${(++this.createdCount).toString().padStart(4, "0")}`;
    const s: FleetSandbox = {
      sandboxID: id,
      templateID: typeof req.templateID === "string" ? req.templateID : "base",
      state: "running",
      cpuCount: 2,
      memoryMB: 512,
      startedAt: Date.now() - this.createdAgeMs,
      metadata: { ...((req.metadata as Record<string, string> | undefined) ?? {}) },
    };
    this.fleet.sandboxes.set(id, s);
    this.created.push(id);
    return json(201, {
      sandboxID: id,
      templateID: s.templateID,
      clientID: "6532622b",
      envdVersion: "0.2.0",
      envdAccessToken: `agent-token-${id}`,
    });
  }

  /** E2B's latest usage sample of each running sandbox named in sandbox_ids (at most 100). */
  private usage(url: URL): Reply {
    const ids = (url.searchParams.get("sandbox_ids") ?? "").split(",").filter((x) => x !== "");
    if (ids.length === 0 || ids.length > 100)
      return json(400, { code: 400, message: "sandbox_ids: 1 to 100 ids" });
    const out: Record<string, unknown> = {};
    const timestamp = new Date().toISOString();
    for (const id of ids) {
      const s = this.fleet.sandboxes.get(id);
      if (s?.state !== "running") continue;
      const memTotal = s.memoryMB * 1_048_576;
      out[id] = {
        cpuCount: s.cpuCount,
        cpuUsedPct: 10,
        memUsed: memTotal / 4,
        memTotal,
        diskUsed: 1_048_576,
        diskTotal: 10_485_760,
        timestamp,
      };
    }
    return json(200, { sandboxes: out });
  }

  /** One page of /v2/sandboxes: a bare array, the next token in `x-next-token` (E2B style). */
  private page(url: URL): Reply {
    const limit = Math.min(
      Number(url.searchParams.get("limit") ?? "") || DEFAULT_PAGE_CAP,
      this.cap,
    );
    const token = url.searchParams.get("nextToken") ?? "";
    const all = this.listed(url);
    let offset = 0;
    let next: string | undefined;
    if (this.paging === "endlessTokens") {
      const n = token === "" ? 0 : Number(token.slice(1)) + 1;
      next = `e${n}`;
    } else {
      offset = token === "" ? 0 : token === REPEATED ? limit : Number(token.slice(1));
      const end = offset + limit;
      if (end < all.length)
        next =
          this.paging === "repeatToken"
            ? REPEATED
            : `o${this.paging === "duplicates" ? end - OVERLAP : end}`;
    }
    const items = all.slice(offset, offset + limit);
    const parts: Buffer[] = [Buffer.from("[")];
    items.forEach((s, i) => {
      if (i) parts.push(Buffer.from(","));
      parts.push(this.fleet.raw.get(s.sandboxID) ?? Buffer.from(JSON.stringify(sandboxJson(s))));
    });
    parts.push(Buffer.from("]"));
    return {
      status: 200,
      body: Buffer.concat(parts),
      headers: { "content-type": "application/json", ...(next ? { "x-next-token": next } : {}) },
    };
  }

  private get cap(): number {
    return this.o.pageCap ?? DEFAULT_PAGE_CAP;
  }

  /** The sandboxes a list query selects, in the upstream's list order. */
  private listed(url: URL): FleetSandbox[] {
    const states = url.searchParams
      .getAll("state")
      .flatMap((v) => v.split(","))
      .filter((v) => v !== "");
    const meta = url.searchParams.getAll("metadata").flatMap((v) => [...new URLSearchParams(v)]);
    const out = [...this.fleet.sandboxes.values()].filter(
      (s) =>
        (states.length === 0 || states.includes(s.state)) &&
        meta.every(([k, v]) => s.metadata[k] === v),
    );
    return this.listOrder === "id"
      ? out.sort((a, b) => cmp(a.sandboxID, b.sandboxID))
      : out.sort((a, b) => b.startedAt - a.startedAt || cmp(a.sandboxID, b.sandboxID));
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Reads a request body, up to 1 MiB (more is cut: the exporter never sends that much). */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size <= MAX_REQUEST_BYTES) chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Starts the management API and the agent on 127.0.0.1 at free ports. */
export async function startUpstream(o: UpstreamOptions): Promise<Upstream> {
  const up = new Upstream(o);
  const api = createServer((req, res) => {
    up.handle(req, res).catch(() => res.destroy());
  });
  up.track(api);
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  up.apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  const agent = await startAgent(up);
  up.track(agent);
  up.dataPort = (agent.address() as AddressInfo).port;
  return up;
}
