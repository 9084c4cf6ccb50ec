// The control channel: management API and sandbox creation, through the standard HTTP proxy settings.
import { setTimeout as sleepTimer } from "node:timers/promises";
import { type Dispatcher, EnvHttpProxyAgent, request } from "undici";
import { type Clock, systemClock } from "../util/clock.js";
import {
  errorReason,
  excerpt,
  PlatformBodyError,
  PlatformHttpError,
  PlatformNetworkError,
  PlatformNotFoundError,
  PlatformTimeoutError,
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
import { backoffDelay, parseRetryAfter } from "./retry.js";
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
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 2_000;

/** One finished request, for metrics. */
export interface RequestInfo {
  endpoint: string;
  method: string;
  status?: number;
  durationMs: number;
  error?: string;
}

/** Settings of the control channel. */
export interface ControlOptions {
  apiUrl: string;
  apiKey: string;
  authStyle: "x-api-key" | "bearer";
  authHeader?: string;
  timeoutMs: number;
  retries: number;
  fieldMap?: FieldMap;
  /** Defaults to an EnvHttpProxyAgent (HTTP_PROXY / HTTPS_PROXY / NO_PROXY). */
  dispatcher?: Dispatcher;
  clock?: Clock;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  onRequest?: (info: RequestInfo) => void;
}

/** Query of the sandbox list. */
export type SandboxQuery = {
  state?: string;
  metadata?: string;
  nextToken?: string;
  limit?: number;
};

/** What POST /sandboxes returns. */
export interface CreatedSandbox {
  id: string;
  templateId: string;
  domain?: string;
  accessToken?: string;
}

interface Call {
  method: "GET" | "POST" | "DELETE";
  /** Path below the prefix, with ids filled in. */
  path: string;
  /** Route template for metrics, e.g. "/nodes/{id}". */
  endpoint: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Use the base URL root instead of the management prefix. */
  root?: boolean;
  /** Status codes that count as success (default: any 2xx). */
}

interface Response {
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

  constructor(private readonly o: ControlOptions) {
    this.ownsDispatcher = !o.dispatcher;
    this.dispatcher = o.dispatcher ?? new EnvHttpProxyAgent();
    this.clock = o.clock ?? systemClock;
    this.base = o.apiUrl.replace(/\/+$/, "");
  }

  health(): Promise<Health> {
    return this.send({ method: "GET", path: "/health", endpoint: "/health" }, true).then((r) =>
      normalizeHealth(r.status, r.body),
    );
  }

  clusterOverview(): Promise<ClusterOverview> {
    return this.json({
      method: "GET",
      path: "/cluster/overview",
      endpoint: "/cluster/overview",
    }).then(normalizeOverview);
  }

  async listNodes(): Promise<PlatformNode[]> {
    const r = await this.send({ method: "GET", path: "/nodes", endpoint: "/nodes" });
    return this.page(r, "/nodes", (raw, p) => normalizeNode(raw, this.o.fieldMap, p)).items;
  }

  getNode(id: string): Promise<PlatformNode> {
    return this.json({ method: "GET", path: `/nodes/${enc(id)}`, endpoint: "/nodes/{id}" }).then(
      (b) => normalizeNode(b, this.o.fieldMap),
    );
  }

  async listTemplates(): Promise<Template[]> {
    const r = await this.send({ method: "GET", path: "/templates", endpoint: "/templates" });
    return this.page(r, "/templates", (raw, p) => normalizeTemplate(raw, this.o.fieldMap, p)).items;
  }

  getTemplate(id: string): Promise<Template> {
    return this.json({
      method: "GET",
      path: `/templates/${enc(id)}`,
      endpoint: "/templates/{id}",
    }).then((b) => normalizeTemplate(b, this.o.fieldMap));
  }

  getSandbox(id: string): Promise<Sandbox> {
    return this.json({
      method: "GET",
      path: `/sandboxes/${enc(id)}`,
      endpoint: "/sandboxes/{id}",
    }).then((b) => normalizeSandbox(b, this.o.fieldMap));
  }

  async deleteSandbox(id: string): Promise<void> {
    await this.send({
      method: "DELETE",
      path: `/sandboxes/${enc(id)}`,
      endpoint: "/sandboxes/{id}",
    });
  }

  async pauseSandbox(id: string): Promise<void> {
    await this.send({
      method: "POST",
      path: `/sandboxes/${enc(id)}/pause`,
      endpoint: "/sandboxes/{id}/pause",
    });
  }

  resumeSandbox(id: string, body: object = {}): Promise<Sandbox> {
    return this.json({
      method: "POST",
      path: `/sandboxes/${enc(id)}/resume`,
      endpoint: "/sandboxes/{id}/resume",
      body,
    }).then((b) => normalizeSandbox(b, this.o.fieldMap));
  }

  async listSandboxes(q: SandboxQuery): Promise<Page<Sandbox>> {
    const d = await this.listSandboxPage(q);
    const items = this.materialize(d);
    return d.nextToken === undefined ? { items } : { items, nextToken: d.nextToken };
  }

  /** One page of /v2/sandboxes whose items are normalized on demand (see walkPages). */
  async listSandboxPage(q: SandboxQuery): Promise<DeferredPage<Sandbox>> {
    const r = await this.send({
      method: "GET",
      path: "/v2/sandboxes",
      endpoint: "/v2/sandboxes",
      query: q,
    });
    let d: DeferredPage<Sandbox>;
    try {
      d = deferList(r.body, r.headers, (raw, p) => normalizeSandbox(raw, this.o.fieldMap, p), {
        map: this.o.fieldMap ?? {},
      });
    } catch (err) {
      throw new PlatformBodyError("/v2/sandboxes", "GET", (err as Error).message);
    }
    return { ...d, items: () => this.materialize(d) };
  }

  private materialize(d: DeferredPage<Sandbox>): Sandbox[] {
    try {
      return d.items();
    } catch (err) {
      throw new PlatformBodyError("/v2/sandboxes", "GET", (err as Error).message);
    }
  }

  async listLogs(
    id: string,
    q: { cursor?: string; limit?: number; direction?: string },
  ): Promise<Page<LogEntry>> {
    const endpoint = "/v2/sandboxes/{id}/logs";
    const r = await this.send({
      method: "GET",
      path: `/v2/sandboxes/${enc(id)}/logs`,
      endpoint,
      query: q,
    });
    return this.page(r, endpoint, (raw, p) => normalizeLogEntry(raw, this.o.fieldMap, p));
  }

  async createSandbox(req: {
    templateId: string;
    timeoutS?: number;
    metadata?: Record<string, string>;
  }): Promise<CreatedSandbox> {
    const body = { templateID: req.templateId, timeout: req.timeoutS, metadata: req.metadata };
    const raw = await this.json({
      method: "POST",
      path: "/sandboxes",
      endpoint: "/sandboxes",
      body,
      root: true,
    });
    const s = normalizeSandbox(raw, this.o.fieldMap, "created");
    const obj = raw as Record<string, unknown>;
    const token = obj.envdAccessToken ?? obj.accessToken ?? obj.access_token;
    return {
      id: s.id,
      templateId: s.templateId || req.templateId,
      ...(s.domain ? { domain: s.domain } : {}),
      ...(typeof token === "string" && token ? { accessToken: token } : {}),
    };
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  private page<T>(r: Response, endpoint: string, item: (raw: unknown, path: string) => T): Page<T> {
    try {
      return normalizeList(r.body, r.headers, item, { map: this.o.fieldMap ?? {} });
    } catch (err) {
      throw new PlatformBodyError(endpoint, "GET", (err as Error).message);
    }
  }

  private async json(call: Call): Promise<unknown> {
    return (await this.send(call)).body;
  }

  /** One logical call: GETs are retried with backoff; mutating calls are attempted exactly once. */
  private async send(call: Call, acceptAnyStatus = false): Promise<Response> {
    const attempts = call.method === "GET" ? 1 + this.o.retries : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(call, acceptAnyStatus);
      } catch (err) {
        const retryable =
          err instanceof PlatformNetworkError ||
          err instanceof PlatformTimeoutError ||
          (err instanceof PlatformHttpError && (err.status >= 500 || err.status === 429));
        if (!retryable || attempt >= attempts) throw err;
        const after =
          err instanceof PlatformHttpError
            ? (err as PlatformHttpError & { retryAfterMs?: number }).retryAfterMs
            : undefined;
        const delay = backoffDelay(
          attempt,
          { baseMs: BACKOFF_BASE_MS, capMs: BACKOFF_CAP_MS, random: this.o.random ?? Math.random },
          after,
        );
        await (this.o.sleep ?? ((ms: number) => sleepTimer(ms)))(delay);
      }
    }
  }

  private async once(call: Call, acceptAnyStatus: boolean): Promise<Response> {
    const { method, endpoint } = call;
    const url = new URL(`${this.base}${call.root ? "" : API_PREFIX}${call.path}`);
    for (const [k, v] of Object.entries(call.query ?? {}))
      if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.o.apiKey) {
      if (this.o.authStyle === "bearer") headers.authorization = `Bearer ${this.o.apiKey}`;
      else headers[(this.o.authHeader ?? "X-API-Key").toLowerCase()] = this.o.apiKey;
    }
    let payload: string | undefined;
    if (call.body !== undefined) {
      payload = JSON.stringify(call.body);
      headers["content-type"] = "application/json";
    }
    const started = this.clock.now();
    const report = (status: number | undefined, error?: unknown): void => {
      this.o.onRequest?.({
        endpoint,
        method,
        ...(status !== undefined ? { status } : {}),
        durationMs: this.clock.now() - started,
        ...(error ? { error: errorReason(error) } : {}),
      });
    };
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method,
        headers,
        body: payload,
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.o.timeoutMs),
        headersTimeout: this.o.timeoutMs,
        bodyTimeout: this.o.timeoutMs,
      });
    } catch (err) {
      const e = isTimeout(err)
        ? new PlatformTimeoutError(endpoint, method, this.o.timeoutMs)
        : new PlatformNetworkError(endpoint, method, err);
      report(undefined, e);
      throw e;
    }
    let text: string;
    try {
      text = await readCapped(res.body, MAX_BODY_BYTES);
    } catch (err) {
      const e = isTimeout(err)
        ? new PlatformTimeoutError(endpoint, method, this.o.timeoutMs)
        : new PlatformBodyError(endpoint, method, (err as Error).message);
      report(res.statusCode, e);
      throw e;
    }
    const status = res.statusCode;
    if (!acceptAnyStatus && (status < 200 || status >= 300)) {
      const e =
        status === 404
          ? new PlatformNotFoundError(endpoint, method)
          : Object.assign(
              new PlatformHttpError(endpoint, method, status, excerpt(text, [this.o.apiKey])),
              {
                retryAfterMs: parseRetryAfter(header(res.headers, "retry-after"), this.clock.now()),
              },
            );
      report(status, e);
      throw e;
    }
    let body: unknown = text;
    const type = header(res.headers, "content-type") ?? "";
    if (text !== "" && (type.includes("json") || /^\s*[[{]/.test(text))) {
      try {
        body = JSON.parse(text);
      } catch {
        const e = new PlatformBodyError(
          endpoint,
          method,
          `response of ${Buffer.byteLength(text)} bytes is not valid JSON`,
        );
        report(status, e);
        throw e;
      }
    }
    report(status);
    return { status, headers: res.headers as Response["headers"], body };
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

function isTimeout(err: unknown): boolean {
  const e = err as { name?: string; code?: string };
  return (
    e?.name === "TimeoutError" ||
    e?.code === "UND_ERR_HEADERS_TIMEOUT" ||
    e?.code === "UND_ERR_BODY_TIMEOUT"
  );
}

/** Reads a body as UTF-8, failing past `max` bytes instead of buffering without bound. */
async function readCapped(body: Dispatcher.ResponseData["body"], max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).byteLength;
    if (size > max) {
      body.destroy();
      throw new Error(`response body larger than ${max} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
