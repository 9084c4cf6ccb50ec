// The control channel: management API and sandbox creation, through the standard HTTP proxy settings.

import { normalizeLifecycleEventPage, type SandboxEventPage } from "../normalize/events.js";
import {
  type DeferredPage,
  type InvalidValues,
  type Normalizer,
  normalizeBuildStatus,
  normalizeHealth,
  normalizeLogEntry,
  normalizeNode,
  normalizeOverview,
  normalizeSandbox,
  normalizeTemplate,
  normalizeUsageList,
  normalizeUsageMap,
  type TemplateBuildStatus,
} from "../normalize/normalize.js";
import type { SnapshotDetail } from "../normalize/snapshot-detail.js";
import {
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
import { ControlCore, enc } from "./control-core.js";
import type {
  ControlClientOptions,
  CreatedSandbox,
  CreateRequest,
  JsonReply,
  LogQuery,
  ResumedSandbox,
  SandboxEventQuery,
  SandboxQuery,
} from "./control-types.js";
import { createSandbox } from "./create-sandbox.js";
import type { Caller } from "./limiter.js";
import { SandboxResumer } from "./resume-sandbox.js";
import { type ListPageOptions, listSandboxPage } from "./sandbox-list.js";
import { deleteSnapshot, snapshotDetail } from "./snapshots.js";
import { type CallQuery, ControlTransport } from "./transport.js";

export type {
  ControlClientOptions,
  CreatedSandbox,
  CreateRequest,
  JsonReply,
  LogQuery,
  ResumedSandbox,
  SandboxEventQuery,
  SandboxQuery,
} from "./control-types.js";
export { e2bMetadata, type ListPageOptions } from "./sandbox-list.js";
export {
  API_PREFIX,
  type CallQuery,
  type ControlOptions,
  ControlTransport,
  type RequestInfo,
} from "./transport.js";

/**
 * Client of the management API (every endpoint) and of sandbox creation. It owns a Normalizer,
 * whose tables remember the records it read: give each caller its own (withOwnNormalizer).
 */
export class ControlClient {
  private readonly transport: ControlTransport;
  private readonly ownsTransport: boolean;
  private readonly core: ControlCore;
  private readonly resumer: SandboxResumer;

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
    this.core = new ControlCore(o, this.transport, caller);
    this.resumer = new SandboxResumer(this.core);
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
    return this.core.n.invalid;
  }

  /** This client's normalizer: a collector that owns its endpoint parses its records with it. */
  get normalizer(): Normalizer {
    return this.core.n;
  }

  /**
   * GET of the management API for a collector that owns its endpoint and parser: the parsed JSON
   * body, unvalidated. Same auth, limiter, retries, timeouts, request metrics (endpoint label =
   * `endpoint`, e.g. "/v2/templates") and errors as every other read; an array in `query` is sent
   * as the key repeated. `parse`: the collector's parser, run as every built-in normalizer is (what
   * it throws becomes PlatformBodyError naming the endpoint, counted as bad_body, secrets scrubbed).
   */
  async getJson<T = unknown>(
    endpoint: string,
    path: string,
    query?: CallQuery,
    parse?: (body: unknown) => T,
  ): Promise<T> {
    return (await this.getJsonReply(endpoint, path, query, parse)).body;
  }

  /** getJson with the answer's headers too (lower-case names): E2B pages by `x-next-token`. */
  async getJsonReply<T = unknown>(
    endpoint: string,
    path: string,
    query?: CallQuery,
    parse?: (body: unknown) => T,
    opts?: { background?: boolean; notFoundExpected?: boolean; admin?: boolean },
  ): Promise<JsonReply<T>> {
    const r = await this.core.send({
      method: "GET",
      path,
      endpoint,
      ...(opts?.admin ? { admin: true } : {}),
      ...(query ? { query } : {}),
      ...(opts?.background ? { background: true } : {}),
      ...(opts?.notFoundExpected ? { notFoundExpected: true } : {}),
    });
    const body = parse ? this.core.decode(endpoint, "GET", () => parse(r.body)) : (r.body as T);
    return { body, headers: r.headers };
  }

  /** GET /health: any status is an answer (up or down); only no answer is an error. */
  async health(): Promise<Health> {
    const r = await this.core.send({
      method: "GET",
      path: "/health",
      endpoint: "/health",
      anyStatus: true,
      reserve: true,
    });
    // The status word becomes a label value: a body echoing a secret must not put it there.
    const secrets = this.transport.secrets;
    return this.core.decode("/health", "GET", () =>
      normalizeHealth(r.status, r.body, (text) => secrets.scrub(text)),
    );
  }

  /** GET /cluster/overview. */
  async clusterOverview(): Promise<ClusterOverview> {
    const e = "/cluster/overview";
    const r = await this.core.send({ method: "GET", path: e, endpoint: e });
    return this.core.decode(e, "GET", () => normalizeOverview(this.core.n, r.body));
  }

  /** GET /nodes (every node, in whatever wrapper the platform uses). */
  async listNodes(): Promise<PlatformNode[]> {
    const r = await this.core.send({
      method: "GET",
      path: "/nodes",
      endpoint: "/nodes",
      admin: true,
    });
    return this.core.page(r, "/nodes", (raw, p) => normalizeNode(this.core.n, raw, p)).items;
  }

  /** GET /nodes/{id}. */
  async getNode(id: string): Promise<PlatformNode> {
    const e = "/nodes/{id}";
    const r = await this.core.send({
      method: "GET",
      path: `/nodes/${enc(id)}`,
      endpoint: e,
      admin: true,
    });
    return this.core.decode(e, "GET", () => normalizeNode(this.core.n, r.body));
  }

  /** GET /templates. */
  async listTemplates(): Promise<Template[]> {
    const r = await this.core.send({ method: "GET", path: "/templates", endpoint: "/templates" });
    return this.core.page(r, "/templates", (raw, p) => normalizeTemplate(this.core.n, raw, p))
      .items;
  }

  /** GET /templates/{id}. */
  async getTemplate(id: string): Promise<Template> {
    const e = "/templates/{id}";
    const r = await this.core.send({ method: "GET", path: `/templates/${enc(id)}`, endpoint: e });
    return this.core.decode(e, "GET", () => normalizeTemplate(this.core.n, r.body));
  }

  /**
   * GET /templates/{id}/builds/{buildID}/status: the build's status and, when failed, why. One
   * attempt: the templateBuilds collector asks again on a later tick, backing off per template.
   */
  async templateBuildStatus(templateId: string, buildId: string): Promise<TemplateBuildStatus> {
    const e = "/templates/{id}/builds/{buildID}/status";
    const path = `/templates/${enc(templateId)}/builds/${enc(buildId)}/status`;
    // Only the status and the reason are wanted: no build logs.
    const r = await this.core.send({
      method: "GET",
      path,
      endpoint: e,
      query: { limit: 0 },
      retries: 0,
    });
    return this.core.decode(e, "GET", () => normalizeBuildStatus(r.body, { templateId, buildId }));
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
    const r = await this.core.send({ method: "GET", path, endpoint: e, query });
    return this.core.decode(e, "GET", () =>
      normalizeLifecycleEventPage(r.body, this.core.n.invalid),
    );
  }

  /**
   * GET /teams/{teamID}/metrics?start=&end= (Unix seconds): the team's points, oldest first; `[]`
   * when the platform has none (self-hosted installs), which is no data, not 0.
   */
  async teamMetrics(teamId: string, startS: number, endS: number): Promise<TeamMetricPoint[]> {
    const e = "/teams/{id}/metrics";
    const r = await this.core.send({
      method: "GET",
      path: `/teams/${enc(teamId)}/metrics`,
      endpoint: e,
      query: { start: Math.floor(startS), end: Math.ceil(endS) },
    });
    return this.core.decode(e, "GET", () => normalizeTeamMetrics(r.body, this.core.n.invalid));
  }

  /** GET /teams/{teamID}/metrics/max?metric=&start=&end= (Unix seconds): the highest value. */
  async teamMetricsMax(
    teamId: string,
    metric: TeamMetricName,
    startS: number,
    endS: number,
  ): Promise<TeamMetricMax> {
    const e = "/teams/{id}/metrics/max";
    const r = await this.core.send({
      method: "GET",
      path: `/teams/${enc(teamId)}/metrics/max`,
      endpoint: e,
      query: { metric, start: Math.floor(startS), end: Math.ceil(endS) },
    });
    return this.core.decode(e, "GET", () => normalizeTeamMetricMax(r.body));
  }

  /**
   * GET /sandboxes/{id}; a 404 is PlatformNotFoundError (gone, not failed). `expectGone`: the
   * caller hopes for the 404 (it confirms a deletion), so it is not counted as an API error.
   */
  async getSandbox(id: string, opts: { expectGone?: boolean } = {}): Promise<Sandbox> {
    const e = "/sandboxes/{id}";
    const r = await this.core.send({
      method: "GET",
      path: `/sandboxes/${enc(id)}`,
      endpoint: e,
      ...(opts.expectGone ? { notFoundExpected: true } : {}),
    });
    return this.core.decode(e, "GET", () => normalizeSandbox(this.core.n, r.body));
  }

  /** GET /templates/{id} of a snapshot, by its raw template id (see snapshots.ts). */
  snapshotDetail(templateId: string): Promise<SnapshotDetail> {
    return snapshotDetail(this.core, templateId);
  }

  /** DELETE /templates/{id} of a snapshot, by its snapshot id: one attempt (see snapshots.ts). */
  deleteSnapshot(snapshotId: string): Promise<void> {
    return deleteSnapshot(this.core, snapshotId);
  }

  /** DELETE /sandboxes/{id}: one attempt, never retried. */
  async deleteSandbox(id: string): Promise<void> {
    await this.core.send({
      method: "DELETE",
      path: `/sandboxes/${enc(id)}`,
      endpoint: "/sandboxes/{id}",
    });
  }

  /** POST /sandboxes/{id}/pause: one attempt, never retried. */
  async pauseSandbox(id: string): Promise<void> {
    const path = `/sandboxes/${enc(id)}/pause`;
    await this.core.send({ method: "POST", path, endpoint: "/sandboxes/{id}/pause" });
  }

  /**
   * POST /sandboxes/{id}/resume with `body` (default `{}`): one attempt; the restored sandbox, with
   * the agent token and version the answer carries (E2B's connect hands out the current token).
   */
  resumeSandbox(id: string, body: object = {}): Promise<ResumedSandbox> {
    return this.resumer.resume(id, body);
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
  listSandboxPage(q: SandboxQuery, opts: ListPageOptions = {}): Promise<DeferredPage<Sandbox>> {
    return listSandboxPage(this.core, q, opts);
  }

  /** GET /sandboxes/metrics?sandbox_ids=...: the latest usage sample of each (at most 100 ids). */
  async sandboxUsage(ids: readonly string[]): Promise<Map<string, SandboxUsage>> {
    const e = "/sandboxes/metrics";
    const r = await this.core.send({
      method: "GET",
      path: e,
      endpoint: e,
      query: { sandbox_ids: ids.join(",") },
    });
    return this.core.decode(e, "GET", () => normalizeUsageMap(r.body, this.core.n.invalid));
  }

  /** GET /sandboxes/{id}/metrics?start=&end= (Unix seconds): its samples, oldest first. */
  async sandboxUsageHistory(id: string, startS: number, endS: number): Promise<SandboxUsage[]> {
    const e = "/sandboxes/{id}/metrics";
    const r = await this.core.send({
      method: "GET",
      path: `/sandboxes/${enc(id)}/metrics`,
      endpoint: e,
      query: { start: Math.floor(startS), end: Math.ceil(endS) },
    });
    return this.core.decode(e, "GET", () => normalizeUsageList(r.body, this.core.n.invalid));
  }

  /** GET /v2/sandboxes/{id}/logs: one page. */
  async listLogs(id: string, q: LogQuery): Promise<Page<LogEntry>> {
    const e = "/v2/sandboxes/{id}/logs";
    const r = await this.core.send({
      method: "GET",
      path: `/v2/sandboxes/${enc(id)}/logs`,
      endpoint: e,
      query: q,
    });
    return this.core.page(r, e, (raw, p) => normalizeLogEntry(this.core.n, raw, p));
  }

  /** POST {apiUrl}/sandboxes: one attempt, never retried (see create-sandbox.ts). */
  createSandbox(req: CreateRequest): Promise<CreatedSandbox> {
    return createSandbox(this.core, req);
  }

  /**
   * Closes the dispatcher when this client made it (not a withOwnNormalizer client, not an injected
   * one); `abandon`: requests still in flight are cut, not waited for.
   */
  async close(abandon = false): Promise<void> {
    if (this.ownsTransport) await this.transport.close(abandon);
  }
}
