// The control channel: management API and sandbox creation, through the standard HTTP proxy settings.

import { PlatformBodyError } from "../http-errors.js";
import {
  type DeferredPage,
  deferList,
  type InvalidValues,
  NormalizeError,
  Normalizer,
  normalizeHealth,
  normalizeList,
  normalizeLogEntry,
  normalizeNode,
  normalizeOverview,
  normalizeSandbox,
  normalizeSandboxIf,
  normalizeTemplate,
  normalizeUsageList,
  normalizeUsageMap,
} from "../normalize/normalize.js";
import type {
  ClusterOverview,
  Health,
  LogEntry,
  Page,
  PlatformNode,
  Sandbox,
  SandboxUsage,
  Template,
} from "../types.js";
import type { Caller } from "./limiter.js";
import { type Call, type ControlOptions, ControlTransport, type Reply } from "./transport.js";

export {
  API_PREFIX,
  type ControlOptions,
  ControlTransport,
  type RequestInfo,
} from "./transport.js";

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

/**
 * Client of the management API (all 12 endpoints) and of sandbox creation. It owns a Normalizer,
 * whose tables remember the records it read: give each caller its own (withOwnNormalizer).
 */
export class ControlClient {
  private readonly transport: ControlTransport;
  private readonly ownsTransport: boolean;
  private readonly n: Normalizer;

  /**
   * `transport`: another client's, to share its dispatcher, options, secrets and onRequest (see
   * withOwnNormalizer); by default the client makes its own from `o`.
   */
  constructor(
    private readonly o: ControlOptions,
    transport?: ControlTransport,
    /** Whose request budget its calls take from the shared limiter. */
    private readonly caller: Caller = "poll",
  ) {
    this.transport = transport ?? new ControlTransport(o);
    this.ownsTransport = transport === undefined;
    this.n = new Normalizer(o.fieldMap);
  }

  /**
   * A client sharing everything with this one (dispatcher, options, secrets, onRequest) but the
   * Normalizer: what one caller's records teach its tables cannot change another caller's reads.
   * Closing it closes nothing; the dispatcher goes with this client.
   */
  withOwnNormalizer(caller: Caller = this.caller): ControlClient {
    return new ControlClient(this.o, this.transport, caller);
  }

  /** Values and records this client's normalizer left out (did not parse, out of range, no id). */
  get invalid(): InvalidValues {
    return this.n.invalid;
  }

  /** GET /health: any status is an answer (up or down); only no answer is an error. */
  async health(): Promise<Health> {
    const r = await this.send({
      method: "GET",
      path: "/health",
      endpoint: "/health",
      anyStatus: true,
      reserve: true,
    });
    // The status word becomes a label value: a body echoing a secret must not put it there.
    const secrets = this.transport.secrets;
    return this.decode("/health", "GET", () =>
      normalizeHealth(r.status, r.body, (text) => secrets.scrub(text)),
    );
  }

  /** GET /cluster/overview. */
  async clusterOverview(): Promise<ClusterOverview> {
    const e = "/cluster/overview";
    const r = await this.send({ method: "GET", path: e, endpoint: e });
    return this.decode(e, "GET", () => normalizeOverview(this.n, r.body));
  }

  /** GET /nodes (every node, in whatever wrapper the platform uses). */
  async listNodes(): Promise<PlatformNode[]> {
    const r = await this.send({ method: "GET", path: "/nodes", endpoint: "/nodes", admin: true });
    return this.page(r, "/nodes", (raw, p) => normalizeNode(this.n, raw, p)).items;
  }

  /** GET /nodes/{id}. */
  async getNode(id: string): Promise<PlatformNode> {
    const e = "/nodes/{id}";
    const r = await this.send({
      method: "GET",
      path: `/nodes/${enc(id)}`,
      endpoint: e,
      admin: true,
    });
    return this.decode(e, "GET", () => normalizeNode(this.n, r.body));
  }

  /** GET /templates. */
  async listTemplates(): Promise<Template[]> {
    const r = await this.send({ method: "GET", path: "/templates", endpoint: "/templates" });
    return this.page(r, "/templates", (raw, p) => normalizeTemplate(this.n, raw, p)).items;
  }

  /** GET /templates/{id}. */
  async getTemplate(id: string): Promise<Template> {
    const e = "/templates/{id}";
    const r = await this.send({ method: "GET", path: `/templates/${enc(id)}`, endpoint: e });
    return this.decode(e, "GET", () => normalizeTemplate(this.n, r.body));
  }

  /**
   * GET /sandboxes/{id}; a 404 is PlatformNotFoundError (gone, not failed). `expectGone`: the
   * caller hopes for the 404 (it confirms a deletion), so it is not counted as an API error.
   */
  async getSandbox(id: string, opts: { expectGone?: boolean } = {}): Promise<Sandbox> {
    const e = "/sandboxes/{id}";
    const r = await this.send({
      method: "GET",
      path: `/sandboxes/${enc(id)}`,
      endpoint: e,
      ...(opts.expectGone ? { notFoundExpected: true } : {}),
    });
    return this.decode(e, "GET", () => normalizeSandbox(this.n, r.body));
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
    // E2B's preferred call: connect resumes a paused sandbox and is a no-op on a running one; it
    // requires the time to live (seconds) the sandbox gets.
    const e2b = this.o.flavor === "e2b";
    const verb = e2b ? "connect" : "resume";
    if (e2b) body = { timeout: CONNECT_TIMEOUT_S, ...body };
    const e = `/sandboxes/{id}/${verb}`;
    const r = await this.send({
      method: "POST",
      path: `/sandboxes/${enc(id)}/${verb}`,
      endpoint: e,
      body,
    });
    return this.decode(e, "POST", () => normalizeSandbox(this.n, r.body));
  }

  /** GET /v2/sandboxes: one page. */
  async listSandboxes(q: SandboxQuery): Promise<Page<Sandbox>> {
    const d = await this.listSandboxPage(q);
    const items = d.items();
    return d.nextToken === undefined ? { items } : { items, nextToken: d.nextToken };
  }

  /**
   * One page of /v2/sandboxes whose items are normalized on demand (see walkPages); `slim` leaves
   * out the metadata but the probe tag, and the unmapped fields, for a caller that keeps neither.
   * `keep`: only items whose id it accepts are normalized and kept (the shard, applied at the list).
   */
  async listSandboxPage(
    q: SandboxQuery,
    opts: { slim?: boolean; keep?: (id: string) => boolean } = {},
  ): Promise<DeferredPage<Sandbox>> {
    const e = "/v2/sandboxes";
    const r = await this.send({ method: "GET", path: e, endpoint: e, query: this.listQuery(q) });
    const n = this.n;
    const slim = opts.slim === true;
    const keep = opts.keep;
    const d = this.decode(e, "GET", () =>
      deferList(n, r.body, r.headers, (raw, p) =>
        keep ? normalizeSandboxIf(n, raw, p, slim, keep) : normalizeSandbox(n, raw, p, slim),
      ),
    );
    return { ...d, items: () => this.decode(e, "GET", () => d.items()) };
  }

  /** GET /sandboxes/metrics?sandbox_ids=...: the latest usage sample of each (at most 100 ids). */
  async sandboxUsage(ids: readonly string[]): Promise<Map<string, SandboxUsage>> {
    const e = "/sandboxes/metrics";
    const r = await this.send({
      method: "GET",
      path: e,
      endpoint: e,
      query: { sandbox_ids: ids.join(",") },
    });
    return this.decode(e, "GET", () => normalizeUsageMap(r.body, this.n.invalid));
  }

  /** GET /sandboxes/{id}/metrics?start=&end= (Unix seconds): its samples, oldest first. */
  async sandboxUsageHistory(id: string, startS: number, endS: number): Promise<SandboxUsage[]> {
    const e = "/sandboxes/{id}/metrics";
    const r = await this.send({
      method: "GET",
      path: `/sandboxes/${enc(id)}/metrics`,
      endpoint: e,
      query: { start: Math.floor(startS), end: Math.ceil(endS) },
    });
    return this.decode(e, "GET", () => normalizeUsageList(r.body, this.n.invalid));
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
    return this.page(r, e, (raw, p) => normalizeLogEntry(this.n, raw, p));
  }

  /**
   * POST {apiUrl}/sandboxes (outside the management prefix): one attempt, never retried. The
   * agent access token it returns joins the secrets scrubbed from errors.
   */
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
    const obj = raw as Record<string, unknown> | null | undefined;
    const token = obj?.envdAccessToken ?? obj?.accessToken ?? obj?.access_token;
    if (typeof token === "string") this.transport.secrets.addTransient(token);
    return this.decode("/sandboxes", "POST", () => {
      const s = normalizeSandbox(this.n, raw, "created");
      return {
        id: s.id,
        templateId: s.templateId || req.templateId,
        ...(s.domain ? { domain: s.domain } : {}),
        ...(typeof token === "string" && token ? { accessToken: token } : {}),
        raw,
      };
    });
  }

  /**
   * The list query in the platform's form. E2B: each key and value of the metadata filter
   * URL-encoded (`a%20b=c&d=e`, then encoded once more as the parameter), and every state listed
   * (it lists only running sandboxes when asked for none).
   */
  private listQuery(q: SandboxQuery): SandboxQuery {
    if (this.o.flavor !== "e2b") return q;
    const out: SandboxQuery = { ...q, state: q.state ?? E2B_STATES };
    if (q.metadata !== undefined) out.metadata = e2bMetadata(q.metadata);
    return out;
  }

  /** Closes the dispatcher when this client made it (not a withOwnNormalizer client, not an injected one). */
  async close(): Promise<void> {
    if (this.ownsTransport) await this.transport.close();
  }

  private send(call: Call): Promise<Reply> {
    return this.transport.send(call, this.caller);
  }

  private page<T>(r: Reply, endpoint: string, item: (raw: unknown, path: string) => T): Page<T> {
    return this.decode(endpoint, "GET", () => normalizeList(this.n, r.body, r.headers, item));
  }

  /**
   * Runs a normalizer; a body of the wrong shape becomes PlatformBodyError naming the endpoint,
   * with secrets scrubbed from the received text before it was cut to an excerpt.
   */
  private decode<T>(endpoint: string, method: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      const secrets = this.transport.secrets;
      const detail =
        err instanceof NormalizeError
          ? err.redacted(secrets).message
          : err instanceof Error
            ? err.message
            : String(err);
      this.transport.badBody(endpoint, method);
      throw this.transport.scrubbed(new PlatformBodyError(endpoint, method, detail));
    }
  }
}

function enc(id: string): string {
  return encodeURIComponent(id);
}

/** Time to live asked of E2B's connect when the caller gives none, seconds (E2B requires one). */
const CONNECT_TIMEOUT_S = 300;

/** The states E2B knows, asked for explicitly so the walk never depends on the default filter. */
const E2B_STATES = "running,paused";

/** `k=v&k2=v2` with each key and value URL-encoded, as E2B's metadata filter expects. */
export function e2bMetadata(filter: string): string {
  return filter
    .split("&")
    .filter((part) => part !== "")
    .map((part) => {
      const at = part.indexOf("=");
      const [k, v] = at < 0 ? [part, ""] : [part.slice(0, at), part.slice(at + 1)];
      return `${encodeURIComponent(k.trim())}=${encodeURIComponent(v.trim())}`;
    })
    .join("&");
}
