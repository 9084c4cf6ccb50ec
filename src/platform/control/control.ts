// The control channel: management API and sandbox creation, through the standard HTTP proxy settings.

import { PlatformBodyError, PlatformHttpError, PlatformNotFoundError } from "../http-errors.js";
import { normalizeLifecycleEventPage, type SandboxEventPage } from "../normalize/events.js";
import {
  type DeferredPage,
  deferList,
  type InvalidValues,
  NormalizeError,
  Normalizer,
  normalizeBuildStatus,
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
  type TemplateBuildStatus,
} from "../normalize/normalize.js";
import {
  type CreateRejectReason,
  classifyCreateRejection,
  normalizeTeamMetricMax,
  normalizeTeamMetrics,
  type TeamMetricMax,
  type TeamMetricName,
  type TeamMetricPoint,
} from "../normalize/team-metrics.js";
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

/** ControlOptions, and what the client reports of the answers it gets. */
export interface ControlClientOptions extends ControlOptions {
  /**
   * A create was refused with 429: why (from its text) and the concurrency limit it names, or what
   * it named in the limit's place that is out of range (not learned).
   */
  onCreateRejected?: (reason: CreateRejectReason, limit?: number, ignoredLimit?: string) => void;
}

/** Query of the lifecycle events (E2B: limit 1-100, newest first unless orderAsc). */
export type SandboxEventQuery = {
  offset?: number;
  limit?: number;
  orderAsc?: boolean;
  /** Full type names (`sandbox.lifecycle.killed`), sent as repeated `types`. */
  types?: readonly string[];
  /** One sandbox's events (GET /events/sandboxes/{sandboxID}). */
  sandboxId?: string;
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
  /** Version of the in-sandbox agent (E2B `envdVersion`), when the answer says. */
  envdVersion?: string;
  /** Auto-pause was asked for, on a platform whose create takes it (E2B); false: not supported. */
  autoPause?: boolean;
  /** Auto-resume on traffic was asked for, on a platform whose create takes it (E2B); false: not supported. */
  autoResume?: boolean;
  /** Token the proxy wants in `e2b-traffic-access-token` (created with allowPublicTraffic false). */
  trafficAccessToken?: string;
  raw: unknown;
}

/** What a resume (E2B: connect) returns: the sandbox, and its agent's token and version when sent. */
export type ResumedSandbox = Sandbox & { accessToken?: string; envdVersion?: string };

/** E2B's two connect routes: v2 (what its SDK calls) and v1 (deprecated, in the OpenAPI document). */
const CONNECT_V1 = "/sandboxes/{id}/connect";
const CONNECT_V2 = "/v2/sandboxes/{id}/connect";
type ConnectRoute = typeof CONNECT_V1 | typeof CONNECT_V2;

/**
 * Client of the management API (all 13 endpoints) and of sandbox creation. It owns a Normalizer,
 * whose tables remember the records it read: give each caller its own (withOwnNormalizer).
 */
export class ControlClient {
  private readonly transport: ControlTransport;
  private readonly ownsTransport: boolean;
  private readonly n: Normalizer;
  /** The connect route the platform answered, once one did (E2B serves v1, v2 or both). */
  private connectRoute: ConnectRoute | undefined;

  /**
   * `transport`: another client's, to share its dispatcher, options, secrets and onRequest (see
   * withOwnNormalizer); by default the client makes its own from `o`.
   */
  constructor(
    private readonly o: ControlClientOptions,
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
   * GET /templates/{id}/builds/{buildID}/status: the build's status and, when failed, why. One
   * attempt: the templateBuilds collector asks again on a later tick, backing off per template.
   */
  async templateBuildStatus(templateId: string, buildId: string): Promise<TemplateBuildStatus> {
    const e = "/templates/{id}/builds/{buildID}/status";
    const path = `/templates/${enc(templateId)}/builds/${enc(buildId)}/status`;
    // Only the status and the reason are wanted: no build logs.
    const r = await this.send({
      method: "GET",
      path,
      endpoint: e,
      query: { limit: 0 },
      retries: 0,
    });
    return this.decode(e, "GET", () => normalizeBuildStatus(r.body, { templateId, buildId }));
  }

  /**
   * GET /events/sandboxes (or /events/sandboxes/{sandboxID}): one page of lifecycle events, newest
   * first unless `orderAsc`; a bad record is an empty slot, counted in `invalid`.
   */
  async listSandboxEvents(q: SandboxEventQuery): Promise<SandboxEventPage> {
    const e = q.sandboxId === undefined ? "/events/sandboxes" : "/events/sandboxes/{sandboxID}";
    let path = q.sandboxId === undefined ? e : `/events/sandboxes/${enc(q.sandboxId)}`;
    // `types` repeats (types=a&types=b), which the query record cannot say.
    const types = (q.types ?? []).map((t) => `types=${encodeURIComponent(t)}`).join("&");
    if (types !== "") path += `?${types}`;
    const query = {
      offset: q.offset,
      limit: q.limit,
      orderAsc: q.orderAsc === undefined ? undefined : String(q.orderAsc),
    };
    const r = await this.send({ method: "GET", path, endpoint: e, query });
    return this.decode(e, "GET", () => normalizeLifecycleEventPage(r.body, this.n.invalid));
  }

  /**
   * GET /teams/{teamID}/metrics?start=&end= (Unix seconds): the team's points, oldest first; `[]`
   * when the platform has none (self-hosted installs), which is no data, not 0.
   */
  async teamMetrics(teamId: string, startS: number, endS: number): Promise<TeamMetricPoint[]> {
    const e = "/teams/{id}/metrics";
    const r = await this.send({
      method: "GET",
      path: `/teams/${enc(teamId)}/metrics`,
      endpoint: e,
      query: { start: Math.floor(startS), end: Math.ceil(endS) },
    });
    return this.decode(e, "GET", () => normalizeTeamMetrics(r.body, this.n.invalid));
  }

  /** GET /teams/{teamID}/metrics/max?metric=&start=&end= (Unix seconds): the highest value. */
  async teamMetricsMax(
    teamId: string,
    metric: TeamMetricName,
    startS: number,
    endS: number,
  ): Promise<TeamMetricMax> {
    const e = "/teams/{id}/metrics/max";
    const r = await this.send({
      method: "GET",
      path: `/teams/${enc(teamId)}/metrics/max`,
      endpoint: e,
      query: { metric, start: Math.floor(startS), end: Math.ceil(endS) },
    });
    return this.decode(e, "GET", () => normalizeTeamMetricMax(r.body));
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

  /**
   * POST /sandboxes/{id}/resume with `body` (default `{}`): one attempt; the restored sandbox, with
   * the agent token and version the answer carries (E2B's connect hands out the current token).
   */
  async resumeSandbox(id: string, body: object = {}): Promise<ResumedSandbox> {
    if (this.o.flavor === "e2b") return this.connectSandbox(id, body);
    const e = "/sandboxes/{id}/resume";
    const r = await this.send({
      method: "POST",
      path: `/sandboxes/${enc(id)}/resume`,
      endpoint: e,
      body,
    });
    return this.resumed(e, r.body);
  }

  /**
   * E2B's connect: resumes a paused sandbox, a no-op on a running one. Until a route has answered,
   * v1 (in E2B's OpenAPI document, deprecated) is tried first and v2 (what E2B's SDK calls) when
   * v1 answers 404, 405 or 410; the route that answers is kept for this client, and tried first
   * from then on. v1 requires the time to live (seconds); v2 takes the same body.
   */
  private async connectSandbox(id: string, body: object): Promise<ResumedSandbox> {
    const payload = { timeout: CONNECT_TIMEOUT_S, ...body };
    const known = this.connectRoute;
    const first = known ?? CONNECT_V1;
    try {
      // Before a route is known, a 404 may mean only that the route is missing: not counted yet.
      return await this.connectBy(first, id, payload, known === undefined);
    } catch (err) {
      // A route that answered before reports a missing sandbox with 404: that is the answer.
      if (known ? !routeGone(err) : !(err instanceof PlatformNotFoundError || routeGone(err)))
        throw err;
      this.connectRoute = undefined;
      try {
        return await this.connectBy(first === CONNECT_V1 ? CONNECT_V2 : CONNECT_V1, id, payload);
      } catch (other) {
        // The second route is not there either: the first one's 404 was about the sandbox.
        throw routeGone(other) && err instanceof PlatformNotFoundError ? err : other;
      }
    }
  }

  /** One connect by `route`; the route is remembered once it answers. */
  private async connectBy(
    route: ConnectRoute,
    id: string,
    body: object,
    trial = false,
  ): Promise<ResumedSandbox> {
    const r = await this.send({
      method: "POST",
      path: route.replace("{id}", enc(id)),
      endpoint: route,
      body,
      ...(trial ? { notFoundExpected: true } : {}),
    });
    this.connectRoute = route;
    return this.resumed(route, r.body);
  }

  /** A resume or connect answer: the sandbox, and its agent token (a secret) and version. */
  private resumed(endpoint: string, raw: unknown): ResumedSandbox {
    const agent = agentOf(raw);
    if (agent.accessToken) this.transport.secrets.addTransient(agent.accessToken);
    return this.decode(endpoint, "POST", () => ({ ...normalizeSandbox(this.n, raw), ...agent }));
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
   * POST {apiUrl}/sandboxes (outside the management prefix): one attempt, never retried. It asks
   * for a secured sandbox unless `secure` is false, as E2B's SDK does; the agent access token it
   * returns joins the secrets scrubbed from errors. `autoPause`: the platform pauses the sandbox
   * at its timeout instead of killing it; only E2B's create takes it (`autoPause`, what its SDK
   * sends for `lifecycle.onTimeout: "pause"`), so elsewhere it is not sent and `autoPause` is false.
   * `autoPauseTimeoutS`: the timeout asked for when auto-pause is sent; where it is not, the
   * sandbox keeps `timeoutS` (a short timeout without auto-pause would only kill it early).
   */
  async createSandbox(req: {
    templateId: string;
    timeoutS?: number;
    metadata?: Record<string, string>;
    secure?: boolean;
    autoPause?: boolean;
    autoPauseTimeoutS?: number;
    /** E2B's `autoResume: {enabled: true}` (sent with autoPause, as its SDK requires). */
    autoResume?: boolean;
    /** false: E2B's `network.allowPublicTraffic: false`, the proxy then wants the traffic token. */
    allowPublicTraffic?: boolean;
  }): Promise<CreatedSandbox> {
    const e2b = this.o.flavor === "e2b";
    const autoPause = req.autoPause === true && e2b;
    const autoResume = req.autoResume === true && autoPause;
    const body = {
      templateID: req.templateId,
      timeout: autoPause ? (req.autoPauseTimeoutS ?? req.timeoutS) : req.timeoutS,
      metadata: req.metadata,
      secure: req.secure ?? true,
      ...(autoPause ? { autoPause } : {}),
      ...(autoResume ? { autoResume: { enabled: true } } : {}),
      ...(req.allowPublicTraffic === false && e2b
        ? { network: { allowPublicTraffic: false } }
        : {}),
    };
    const call: Call = {
      method: "POST",
      path: "/sandboxes",
      endpoint: "/sandboxes",
      body,
      root: true,
    };
    const raw = (await this.sendCreate(call)).body;
    const agent = agentOf(raw);
    if (agent.accessToken) this.transport.secrets.addTransient(agent.accessToken);
    const traffic = (raw as { trafficAccessToken?: unknown } | null)?.trafficAccessToken;
    const trafficAccessToken = typeof traffic === "string" && traffic !== "" ? traffic : undefined;
    if (trafficAccessToken) this.transport.secrets.addTransient(trafficAccessToken);
    return this.decode("/sandboxes", "POST", () => {
      const s = normalizeSandbox(this.n, raw, "created");
      return {
        id: s.id,
        templateId: s.templateId || req.templateId,
        ...(s.domain ? { domain: s.domain } : {}),
        ...agent,
        ...(req.autoPause !== undefined ? { autoPause } : {}),
        ...(req.autoResume !== undefined ? { autoResume } : {}),
        ...(trafficAccessToken ? { trafficAccessToken } : {}),
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

  /**
   * Closes the dispatcher when this client made it (not a withOwnNormalizer client, not an injected
   * one); `abandon`: requests still in flight are cut, not waited for.
   */
  async close(abandon = false): Promise<void> {
    if (this.ownsTransport) await this.transport.close(abandon);
  }

  /** A create; a 429 is reported to onCreateRejected, classified by its text, then rethrown. */
  private async sendCreate(call: Call): Promise<Reply> {
    try {
      return await this.send(call);
    } catch (err) {
      if (err instanceof PlatformHttpError && err.status === 429 && this.o.onCreateRejected) {
        const { reason, limit, ignoredLimit } = classifyCreateRejection(err.bodyExcerpt);
        this.o.onCreateRejected(reason, limit, ignoredLimit);
      }
      throw err;
    }
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

/** The agent's token and version a create, connect or resume answer carries (E2B's spellings first). */
function agentOf(raw: unknown): { accessToken?: string; envdVersion?: string } {
  if (typeof raw !== "object" || raw === null) return {};
  const obj = raw as Record<string, unknown>;
  const token = obj.envdAccessToken ?? obj.accessToken ?? obj.access_token;
  const version = obj.envdVersion ?? obj.envd_version;
  return {
    ...(typeof token === "string" && token !== "" ? { accessToken: token } : {}),
    ...(typeof version === "string" && version !== "" ? { envdVersion: version } : {}),
  };
}

/** A 405 or 410: the platform has no such route (any more); a 404 may also be a missing sandbox. */
function routeGone(err: unknown): boolean {
  return err instanceof PlatformHttpError && (err.status === 405 || err.status === 410);
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
