// The control channel: management API and sandbox creation, through the standard HTTP proxy settings.
import { setTimeout as sleepTimer } from "node:timers/promises";
import { Agent, type Dispatcher, EnvHttpProxyAgent, request } from "undici";
import { type Clock, systemClock } from "../util/clock.js";
import {
  BodyTooLargeError,
  errorReason,
  excerpt,
  isTimeout,
  PlatformBodyError,
  PlatformHttpError,
  PlatformNetworkError,
  PlatformNotFoundError,
  PlatformTimeoutError,
  readCapped,
} from "./http-errors.js";
import {
  type DeferredPage,
  deferList,
  type FieldMap,
  normalizeHealth,
  normalizeList,
  normalizeLogEntry,
  normalizeNode,
  normalizeOverview,
  normalizeSandbox,
  normalizeTemplate,
} from "./normalize.js";
import { backoffDelay, isRetryable, parseRetryAfter } from "./retry.js";
import type {
  ClusterOverview,
  Health,
  LogEntry,
  Page,
  PlatformNode,
  Sandbox,
  Template,
} from "./types.js";

/** Management paths live below this prefix of the base URL. */
export const API_PREFIX = "/sandboxapi/v1";
const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 2_000;
const DEFAULT_AUTH_HEADER = "X-API-Key";

/** One finished request attempt, for metrics. */
export interface RequestInfo {
  /** Route template, e.g. "/nodes/{id}". */
  endpoint: string;
  method: string;
  status?: number;
  durationMs: number;
  /** Reason code: timeout, network, http_4xx, http_5xx, not_found, bad_body. */
  error?: string;
}

/** Settings of the control channel. */
export interface ControlOptions {
  apiUrl: string;
  apiKey: string;
  authStyle: "x-api-key" | "bearer";
  /** Header carrying the key in the "x-api-key" style; default X-API-Key. */
  authHeader?: string;
  timeoutMs: number;
  /** Extra attempts of an idempotent GET after a retryable failure. */
  retries: number;
  fieldMap?: FieldMap;
  /**
   * Defaults to an EnvHttpProxyAgent (HTTP_PROXY / HTTPS_PROXY / NO_PROXY) when `envProxy`, else to
   * a plain Agent: the proxy agent parses each request's origin and reads NO_PROXY again, a cost
   * visible at 1,000 pages a cycle that buys nothing when no proxy is set.
   */
  dispatcher?: Dispatcher;
  /** A proxy variable is set (the config loader tells); default true. */
  envProxy?: boolean;
  clock?: Clock;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Bound on one response body; default 32 MiB. */
  maxBodyBytes?: number;
  onRequest?: (info: RequestInfo) => void;
}

/** Query of the sandbox list; `metadata` and `state` go to the platform verbatim (URL-encoded). */
export type SandboxQuery = {
  state?: string;
  metadata?: string;
  nextToken?: string;
  limit?: number;
};

/** Query of a sandbox's logs. */
export type LogQuery = { cursor?: string; limit?: number; direction?: string };

/** What POST /sandboxes returns. */
export interface CreatedSandbox {
  id: string;
  templateId: string;
  domain?: string;
  /** Token of the in-sandbox agent (E2B `envdAccessToken`), when the platform issues one. */
  accessToken?: string;
  raw: unknown;
}

type Method = "GET" | "POST" | "DELETE";

interface Call {
  method: Method;
  /** Path below the prefix (or the root), ids filled in. */
  path: string;
  /** Route template for metrics, e.g. "/nodes/{id}". */
  endpoint: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Use the base URL root instead of the management prefix (sandbox creation). */
  root?: boolean;
  /** Hand back any status instead of raising on non-2xx (health reports it). */
  anyStatus?: boolean;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** Client of the management API (all 12 endpoints) and of sandbox creation. */
export class ControlClient {
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly clock: Clock;
  private readonly base: string;
  private readonly authHeaders: Record<string, string>;

  constructor(private readonly o: ControlOptions) {
    this.ownsDispatcher = !o.dispatcher;
    this.dispatcher =
      o.dispatcher ?? (o.envProxy === false ? new Agent() : new EnvHttpProxyAgent());
    this.clock = o.clock ?? systemClock;
    this.base = o.apiUrl.replace(/\/+$/, "");
    this.authHeaders = !o.apiKey
      ? {}
      : o.authStyle === "bearer"
        ? { authorization: `Bearer ${o.apiKey}` }
        : { [(o.authHeader || DEFAULT_AUTH_HEADER).toLowerCase()]: o.apiKey };
  }

  /** GET /health: any status is an answer (up or down); only no answer is an error. */
  async health(): Promise<Health> {
    const r = await this.send({
      method: "GET",
      path: "/health",
      endpoint: "/health",
      anyStatus: true,
    });
    return this.decode("/health", "GET", () => normalizeHealth(r.status, r.body));
  }

  /** GET /cluster/overview. */
  async clusterOverview(): Promise<ClusterOverview> {
    const e = "/cluster/overview";
    const r = await this.send({ method: "GET", path: e, endpoint: e });
    return this.decode(e, "GET", () => normalizeOverview(r.body));
  }

  /** GET /nodes (every node, in whatever wrapper the platform uses). */
  async listNodes(): Promise<PlatformNode[]> {
    const r = await this.send({ method: "GET", path: "/nodes", endpoint: "/nodes" });
    return this.page(r, "/nodes", (raw, p) => normalizeNode(raw, this.o.fieldMap, p)).items;
  }

  /** GET /nodes/{id}. */
  async getNode(id: string): Promise<PlatformNode> {
    const e = "/nodes/{id}";
    const r = await this.send({ method: "GET", path: `/nodes/${enc(id)}`, endpoint: e });
    return this.decode(e, "GET", () => normalizeNode(r.body, this.o.fieldMap));
  }

  /** GET /templates. */
  async listTemplates(): Promise<Template[]> {
    const r = await this.send({ method: "GET", path: "/templates", endpoint: "/templates" });
    return this.page(r, "/templates", (raw, p) => normalizeTemplate(raw, this.o.fieldMap, p)).items;
  }

  /** GET /templates/{id}. */
  async getTemplate(id: string): Promise<Template> {
    const e = "/templates/{id}";
    const r = await this.send({ method: "GET", path: `/templates/${enc(id)}`, endpoint: e });
    return this.decode(e, "GET", () => normalizeTemplate(r.body, this.o.fieldMap));
  }

  /** GET /sandboxes/{id}; a 404 is PlatformNotFoundError (gone, not failed). */
  async getSandbox(id: string): Promise<Sandbox> {
    const e = "/sandboxes/{id}";
    const r = await this.send({ method: "GET", path: `/sandboxes/${enc(id)}`, endpoint: e });
    return this.decode(e, "GET", () => normalizeSandbox(r.body, this.o.fieldMap));
  }

  /** DELETE /sandboxes/{id}: one attempt, never retried. */
  async deleteSandbox(id: string): Promise<void> {
    await this.send({
      method: "DELETE",
      path: `/sandboxes/${enc(id)}`,
      endpoint: "/sandboxes/{id}",
    });
  }

  /** POST /sandboxes/{id}/pause: one attempt, never retried. */
  async pauseSandbox(id: string): Promise<void> {
    const path = `/sandboxes/${enc(id)}/pause`;
    await this.send({ method: "POST", path, endpoint: "/sandboxes/{id}/pause" });
  }

  /** POST /sandboxes/{id}/resume with `body` (default `{}`): one attempt; the restored sandbox. */
  async resumeSandbox(id: string, body: object = {}): Promise<Sandbox> {
    const e = "/sandboxes/{id}/resume";
    const r = await this.send({
      method: "POST",
      path: `/sandboxes/${enc(id)}/resume`,
      endpoint: e,
      body,
    });
    return this.decode(e, "POST", () => normalizeSandbox(r.body, this.o.fieldMap));
  }

  /** GET /v2/sandboxes: one page. */
  async listSandboxes(q: SandboxQuery): Promise<Page<Sandbox>> {
    const d = await this.listSandboxPage(q);
    const items = d.items();
    return d.nextToken === undefined ? { items } : { items, nextToken: d.nextToken };
  }

  /**
   * One page of /v2/sandboxes whose items are normalized on demand (see walkPages); `slim` leaves
   * out metadata and the end time, for a caller that keeps neither.
   */
  async listSandboxPage(
    q: SandboxQuery,
    opts: { slim?: boolean } = {},
  ): Promise<DeferredPage<Sandbox>> {
    const e = "/v2/sandboxes";
    const r = await this.send({ method: "GET", path: e, endpoint: e, query: q });
    const map = this.o.fieldMap;
    const slim = opts.slim === true;
    const d = this.decode(e, "GET", () =>
      deferList(r.body, r.headers, (raw, p) => normalizeSandbox(raw, map, p, slim), {
        map: map ?? {},
      }),
    );
    return { ...d, items: () => this.decode(e, "GET", () => d.items()) };
  }

  /** GET /v2/sandboxes/{id}/logs: one page. */
  async listLogs(id: string, q: LogQuery): Promise<Page<LogEntry>> {
    const e = "/v2/sandboxes/{id}/logs";
    const r = await this.send({
      method: "GET",
      path: `/v2/sandboxes/${enc(id)}/logs`,
      endpoint: e,
      query: q,
    });
    return this.page(r, e, (raw, p) => normalizeLogEntry(raw, this.o.fieldMap, p));
  }

  /** POST {apiUrl}/sandboxes (outside the management prefix): one attempt, never retried. */
  async createSandbox(req: {
    templateId: string;
    timeoutS?: number;
    metadata?: Record<string, string>;
  }): Promise<CreatedSandbox> {
    const body = { templateID: req.templateId, timeout: req.timeoutS, metadata: req.metadata };
    const call: Call = {
      method: "POST",
      path: "/sandboxes",
      endpoint: "/sandboxes",
      body,
      root: true,
    };
    const raw = (await this.send(call)).body;
    return this.decode("/sandboxes", "POST", () => {
      const s = normalizeSandbox(raw, this.o.fieldMap, "created");
      const obj = raw as Record<string, unknown>;
      const token = obj.envdAccessToken ?? obj.accessToken ?? obj.access_token;
      return {
        id: s.id,
        templateId: s.templateId || req.templateId,
        ...(s.domain ? { domain: s.domain } : {}),
        ...(typeof token === "string" && token ? { accessToken: token } : {}),
        raw,
      };
    });
  }

  /** Closes the dispatcher when the client made it; an injected one belongs to the caller. */
  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  private page<T>(r: Reply, endpoint: string, item: (raw: unknown, path: string) => T): Page<T> {
    return this.decode(endpoint, "GET", () =>
      normalizeList(r.body, r.headers, item, { map: this.o.fieldMap ?? {} }),
    );
  }

  /** Runs a normalizer; a body of the wrong shape becomes PlatformBodyError naming the endpoint. */
  private decode<T>(endpoint: string, method: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw new PlatformBodyError(endpoint, method, (err as Error).message);
    }
  }

  /** One logical call: GETs are retried with backoff; mutating calls are attempted exactly once. */
  private async send(call: Call): Promise<Reply> {
    const attempts = call.method === "GET" ? 1 + Math.max(0, this.o.retries) : 1;
    const backoff = {
      baseMs: BACKOFF_BASE_MS,
      capMs: BACKOFF_CAP_MS,
      random: this.o.random ?? Math.random,
    };
    const sleep = this.o.sleep ?? ((ms: number) => sleepTimer(ms));
    // Bounded by `attempts`: every iteration either returns, throws, or counts one attempt.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(call);
      } catch (err) {
        if (attempt >= attempts || !isRetryable(err)) throw err;
        const after = err instanceof PlatformHttpError ? err.retryAfterMs : undefined;
        await sleep(backoffDelay(attempt, backoff, after));
      }
    }
  }

  private async once(call: Call): Promise<Reply> {
    const { method } = call;
    const url = new URL(`${this.base}${call.root ? "" : API_PREFIX}${call.path}`);
    for (const [k, v] of Object.entries(call.query ?? {}))
      if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json", ...this.authHeaders };
    let payload: string | undefined;
    if (call.body !== undefined) {
      payload = JSON.stringify(call.body);
      headers["content-type"] = "application/json";
    }
    const started = this.clock.now();
    let status: number | undefined;
    try {
      const res = await request(url, {
        method,
        headers,
        body: payload,
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.o.timeoutMs),
        headersTimeout: this.o.timeoutMs,
        bodyTimeout: this.o.timeoutMs,
      });
      status = res.statusCode;
      const raw = await readCapped(res.body, this.o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
      const reply = this.interpret(call, res.statusCode, res.headers, raw);
      this.report(call, started, status);
      return reply;
    } catch (err) {
      const e = this.typed(call, err);
      this.report(call, started, status, e);
      throw e;
    }
  }

  /** Status and body of one response -> a Reply, or the typed error it stands for. */
  private interpret(call: Call, status: number, headers: Reply["headers"], raw: Buffer): Reply {
    const { method, endpoint } = call;
    const text = raw.toString("utf8");
    if (!call.anyStatus && (status < 200 || status >= 300)) {
      if (status === 404) throw new PlatformNotFoundError(endpoint, method);
      const after = parseRetryAfter(header(headers, "retry-after"), this.clock.now());
      throw new PlatformHttpError(endpoint, method, status, excerpt(text, [this.o.apiKey]), after);
    }
    let body: unknown = text;
    const type = header(headers, "content-type") ?? "";
    if (text.trim() !== "" && (type.includes("json") || /^\s*[[{]/.test(text))) {
      try {
        body = JSON.parse(text);
      } catch {
        throw new PlatformBodyError(
          endpoint,
          method,
          `response of ${raw.byteLength} bytes is not valid JSON`,
        );
      }
    }
    return { status, headers, body };
  }

  /** Any failure of one attempt as one of our typed errors. */
  private typed(call: Call, err: unknown): Error {
    const { method, endpoint } = call;
    if (err instanceof PlatformHttpError || err instanceof PlatformNotFoundError) return err;
    if (err instanceof PlatformBodyError) return err;
    if (isTimeout(err)) return new PlatformTimeoutError(endpoint, method, this.o.timeoutMs);
    if (err instanceof BodyTooLargeError)
      return new PlatformBodyError(endpoint, method, err.message);
    return new PlatformNetworkError(endpoint, method, err);
  }

  private report(call: Call, started: number, status?: number, error?: unknown): void {
    this.o.onRequest?.({
      endpoint: call.endpoint,
      method: call.method,
      ...(status !== undefined ? { status } : {}),
      durationMs: this.clock.now() - started,
      ...(error ? { error: errorReason(error) } : {}),
    });
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

function header(
  h: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}
