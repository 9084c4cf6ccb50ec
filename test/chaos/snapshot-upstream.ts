// A hostile E2B management API for the retention rules, written apart from the simulator: root
// paths as E2B serves them (GET /health, /v2/sandboxes, /snapshots paged by X-Next-Token newest
// first, /volumes, GET and DELETE /templates/{id}), with snapshot lists that loop, DELETE answers
// chosen per template, a DELETE that holds its answer, and a hook run as a list page is served.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Clock } from "../../src/util/clock.js";
import { listenLoopback } from "../helpers/loopback.js";

/** Longest a held DELETE is kept unanswered, whatever the client does. */
const MAX_HOLD_MS = 5_000;
/** E2B's largest page of /snapshots. */
const E2B_PAGE_LIMIT = 100;
const TAG_SEPARATOR = ":";
/** A DELETE whose answer is held (written later, or never). */
const HELD = Symbol("held");

/** Status, JSON body (none: an empty answer) and extra headers. */
type Answer = [status: number, body?: unknown, headers?: Record<string, string>];

/** One snapshot as the platform stores it. */
export interface StoredSnapshot {
  /** The raw template id: the only key GET /templates/{id} finds it by. */
  templateID: string;
  tag: string;
  /** `team/name` names; the first one is its listed id when there is one (as E2B lists it). */
  names: string[];
  createdAt: number;
  lastSpawnedAt: number | null;
  spawnCount: number;
}

/** A sandbox of the list (E2B's ListedSandbox). */
export interface ListedSandbox {
  sandboxID: string;
  templateID: string;
  startedAt: number;
  state: "running" | "paused";
}

/**
 * How GET /snapshots pages: normally; one next token handed out forever; or the third page's
 * token pointing back to the second page.
 */
export type SnapshotPaging = "normal" | "sameToken" | "backToEarlier";

/** What DELETE /templates/{id} answers for a template: a status (E2B's error body), or a hold. */
export type DeleteAnswer = { status: number; message?: string } | { hold: true };

/** The snapshot id E2B lists: its first name, else its template id, with the tag. */
export function snapshotIdOf(s: StoredSnapshot): string {
  return `${s.names[0] ?? s.templateID}${TAG_SEPARATOR}${s.tag}`;
}

/** The running platform; its state is changed by the test between (and during) cycles. */
export class SnapshotUpstream {
  url = "";
  readonly snapshots: StoredSnapshot[] = [];
  readonly sandboxes: ListedSandbox[] = [];
  paging: SnapshotPaging = "normal";
  /** Records per /snapshots page at most, whatever `limit` asks (E2B may serve fewer). */
  pageSize = 2;
  /** DELETE answers by template id; a template without one is deleted (204). */
  readonly deleteAnswers = new Map<string, DeleteAnswer>();
  /** Runs as each /snapshots page is served: the platform changing under the exporter. */
  onListPage: (() => void) | undefined;
  /** Every request, `METHOD raw-path` (still URL-encoded, query cut). */
  readonly requests: string[] = [];
  private readonly held = new Set<NodeJS.Timeout>();
  private closeServer: (() => Promise<void>) | undefined;

  constructor(private readonly clock: Clock) {}

  async start(): Promise<this> {
    const l = await listenLoopback(createServer((req, res) => this.handle(req, res)));
    this.url = l.url;
    this.closeServer = l.close;
    return this;
  }

  async close(): Promise<void> {
    for (const t of this.held) clearTimeout(t);
    this.held.clear();
    await this.closeServer?.();
  }

  /** Adds a snapshot made `ageMs` before now (on the shared clock); returns its listed id. */
  add(o: {
    templateID: string;
    ageMs: number;
    names?: string[];
    tag?: string;
    lastSpawnedAgoMs?: number;
  }): string {
    const now = this.clock.now();
    const s: StoredSnapshot = {
      templateID: o.templateID,
      tag: o.tag ?? "default",
      names: o.names ?? [],
      createdAt: now - o.ageMs,
      lastSpawnedAt: o.lastSpawnedAgoMs === undefined ? null : now - o.lastSpawnedAgoMs,
      spawnCount: o.lastSpawnedAgoMs === undefined ? 0 : 1,
    };
    this.snapshots.push(s);
    return snapshotIdOf(s);
  }

  /** A sandbox was started from the template now: its last spawn moves. */
  spawn(templateID: string): void {
    const s = this.snapshots.find((x) => x.templateID === templateID);
    if (!s) throw new Error(`no snapshot ${templateID}`);
    s.lastSpawnedAt = this.clock.now();
    s.spawnCount++;
  }

  /** Requests whose `METHOD path` starts with `prefix`. */
  seen(prefix: string): string[] {
    return this.requests.filter((r) => r.startsWith(prefix));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const raw = req.url ?? "/";
    const method = req.method ?? "GET";
    this.requests.push(`${method} ${raw.split("?")[0]}`);
    const answer = this.route(method, new URL(raw, "http://x"), res);
    if (answer === HELD) return;
    const [status, body, headers] = answer;
    if (body === undefined) {
      res.writeHead(status).end();
      return;
    }
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  }

  private route(method: string, u: URL, res: ServerResponse): Answer | typeof HELD {
    const path = u.pathname;
    if (method === "GET" && path === "/health") return [204];
    if (method === "GET" && path === "/v2/sandboxes") return [200, this.sandboxList()];
    if (method === "GET" && path === "/volumes") return [200, []];
    if (method === "GET" && path === "/snapshots") return this.snapshotPage(u);
    const m = /^\/templates\/([^/]+)$/.exec(path);
    if (m && method === "GET") return this.detail(decodeURIComponent(m[1] as string));
    if (m && method === "DELETE") return this.remove(decodeURIComponent(m[1] as string), res);
    return notFound(`no route ${method} ${path}`);
  }

  private sandboxList(): unknown[] {
    return this.sandboxes.map((s) => ({
      sandboxID: s.sandboxID,
      templateID: s.templateID,
      alias: s.templateID,
      clientID: "6532622b",
      startedAt: new Date(s.startedAt).toISOString(),
      endAt: new Date(s.startedAt + 86_400_000).toISOString(),
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 512,
      metadata: {},
      state: s.state,
      envdVersion: "0.2.0",
    }));
  }

  /** Newest first, `limit` (at most pageSize) a page, the next offset as an opaque token. */
  private snapshotPage(u: URL): Answer {
    const limit = Math.min(Number(u.searchParams.get("limit") ?? E2B_PAGE_LIMIT), this.pageSize);
    const token = u.searchParams.get("nextToken");
    const offset = token === null ? 0 : Number(Buffer.from(token, "base64url").toString());
    if (!Number.isInteger(offset) || offset < 0)
      return [400, { code: 400, message: "Invalid next token" }];
    const sorted = [...this.snapshots].sort((a, b) => b.createdAt - a.createdAt);
    const page = sorted.slice(offset, offset + limit);
    let next: number | undefined = offset + limit < sorted.length ? offset + limit : undefined;
    // The hostile pagings: a token that never moves, or one that points back a page.
    if (this.paging === "sameToken") next = limit;
    if (this.paging === "backToEarlier" && offset >= 2 * limit) next = limit;
    this.onListPage?.();
    const headers: Record<string, string> =
      next === undefined ? {} : { "x-next-token": Buffer.from(String(next)).toString("base64url") };
    return [200, page.map((s) => ({ snapshotID: snapshotIdOf(s), names: s.names })), headers];
  }

  /** E2B's TemplateWithBuilds, looked up by raw id only: a name or a tagged id is not found. */
  private detail(id: string): Answer {
    const s = this.snapshots.find((x) => x.templateID === id);
    if (!s) return notFound(`Template ${id} not found`);
    return [
      200,
      {
        templateID: s.templateID,
        public: false,
        names: s.names,
        aliases: s.names.map((n) => n.slice(n.indexOf("/") + 1)),
        createdAt: new Date(s.createdAt).toISOString(),
        updatedAt: new Date(s.createdAt).toISOString(),
        lastSpawnedAt: s.lastSpawnedAt === null ? null : new Date(s.lastSpawnedAt).toISOString(),
        spawnCount: s.spawnCount,
        builds: [],
      },
    ];
  }

  /**
   * E2B takes a name or a raw id and cuts the tag; a 204 or 404 takes the template off the list,
   * with every snapshot made under its name. A held answer is a 204 after MAX_HOLD_MS.
   */
  private remove(idOrName: string, res: ServerResponse): Answer | typeof HELD {
    const colon = idOrName.lastIndexOf(TAG_SEPARATOR);
    const bare = colon > idOrName.lastIndexOf("/") ? idOrName.slice(0, colon) : idOrName;
    const s = this.snapshots.find((x) => x.templateID === bare || x.names.includes(bare));
    if (!s) return notFound(`Template '${bare}' not found`);
    const answer = this.deleteAnswers.get(s.templateID) ?? { status: 204 };
    if ("hold" in answer) {
      const t = setTimeout(() => {
        this.held.delete(t);
        if (!res.destroyed) res.writeHead(204).end();
      }, MAX_HOLD_MS);
      this.held.add(t);
      return HELD;
    }
    if (answer.status === 204 || answer.status === 404) this.drop(s.templateID);
    if (answer.status === 204) return [204];
    const message = answer.message ?? `Error when deleting template '${s.templateID}'`;
    return [answer.status, { code: answer.status, message }];
  }

  private drop(templateID: string): void {
    for (let i = this.snapshots.length - 1; i >= 0; i--)
      if (this.snapshots[i]?.templateID === templateID) this.snapshots.splice(i, 1);
  }
}

/** E2B's error body. */
function notFound(message: string): Answer {
  return [404, { code: 404, message }];
}
