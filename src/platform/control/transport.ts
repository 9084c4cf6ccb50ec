// The wire under the control channel: one request with retries, typed errors, metrics, and the
// one point where every error of the channel is scrubbed of secrets.

import { setTimeout as sleepTimer } from "node:timers/promises";
import { Agent, type Dispatcher, EnvHttpProxyAgent } from "undici";
import { type Clock, systemClock } from "../../util/clock.js";
import { timerMs } from "../../util/duration.js";
import { Secrets } from "../../util/secrets.js";
import {
  BodyTooLargeError,
  errorReason,
  excerpt,
  isTimeout,
  PlatformBodyError,
  PlatformHeldError,
  PlatformHttpError,
  PlatformNetworkError,
  PlatformNotFoundError,
  PlatformTimeoutError,
} from "../http-errors.js";
import type { FieldMap } from "../normalize/normalize.js";
import { requestBuffered } from "./buffered-request.js";
import type { Caller, RequestBudget } from "./limiter.js";
import { backoffDelay, isRetryable, parseRetryAfter } from "./retry.js";

/** Management paths live below this prefix of the base URL. */
export const API_PREFIX = "/sandboxapi/v1";
const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;
const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 2_000;

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
  /** Header carrying the key in the "x-api-key" style. */
  authHeader: string;
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
  /** A proxy variable is set (the config loader tells); unused when `dispatcher` is given. */
  envProxy: boolean;
  clock?: Clock;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Bound on one response body; default 32 MiB. */
  maxBodyBytes?: number;
  onRequest?: (info: RequestInfo) => void;
  /** Path of the management API below apiUrl (empty for E2B's hosted API); default /sandboxapi/v1. */
  apiPrefix?: string;
  /** Which platform: E2B encodes filters its own way, resumes by connect, pages newest first. */
  flavor?: "sandboxapi" | "e2b";
  /** X-Admin-Token for the node endpoints (a secret: scrubbed like the API key). */
  adminToken?: string;
  /**
   * The team every call reads as (several teams): sent as X-Team-ID; with `viaAdminToken` every
   * call carries the admin token instead of an API key (a self-hosted cluster, infra#2934).
   */
  team?: { id: string; viaAdminToken: boolean };
  /** The daemon's one request budget (see RequestLimiter); none: no limit. */
  limiter?: RequestBudget;
  /** Cap of an honoured Retry-After; default: the retry backoff's cap (2 s). */
  maxRetryAfterMs?: number;
  /** A 2xx answer whose body was not of the expected shape (counted as a bad_body error). */
  onBadBody?: (endpoint: string, method: string) => void;
  /**
   * Secrets scrubbed from every error (share one with the logger and the data channel); the API
   * key is added to it. Default: a Secrets of its own holding the API key.
   */
  secrets?: Secrets;
}

type Method = "GET" | "POST" | "DELETE";

/** Query of a call: an array is sent as the key repeated (`types=a&types=b`). */
export type CallQuery = Readonly<
  Record<string, string | number | boolean | readonly string[] | undefined>
>;

/** One logical call of the management API. */
export interface Call {
  method: Method;
  /** Path below the prefix (or the root), ids filled in. */
  path: string;
  /** Route template for metrics, e.g. "/nodes/{id}". */
  endpoint: string;
  /** Values of undefined or "" are left out; an array is sent as the key repeated. */
  query?: CallQuery;
  body?: unknown;
  /** Use the base URL root instead of the management prefix (sandbox creation). */
  root?: boolean;
  /** Hand back any status instead of raising on non-2xx (health reports it). */
  anyStatus?: boolean;
  /** Send the admin token (E2B serves the node endpoints to admins only). */
  admin?: boolean;
  /** May use health's own reserve of the request budget (GET /health: the daemon must know). */
  reserve?: boolean;
  /** An inventory read: waits while any other request waits, within its share (RequestLimiter). */
  background?: boolean;
  /** A 404 is the answer hoped for (a deletion confirmed): not counted as an error. */
  notFoundExpected?: boolean;
  /** Extra attempts of this GET after a retryable failure; default the channel's `retries`. */
  retries?: number;
}

/** A response: status, headers and the body, parsed when it is JSON, else its text. */
export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** Distinct call paths remembered parsed; ids make paths many, the bound keeps them few. */
const TARGETS_MAX = 256;

/** `query` as URLSearchParams serializes it: empty values left out, an array as the key repeated. */
function queryString(query: CallQuery | undefined): string {
  if (query === undefined) return "";
  const params = new URLSearchParams();
  for (const k in query) appendParam(params, k, query[k]);
  return params.toString();
}

function appendParam(params: URLSearchParams, k: string, v: CallQuery[string]): void {
  if (typeof v === "object") {
    for (const x of v) if (x !== "") params.append(k, x);
  } else if (v !== undefined && v !== "") params.set(k, String(v));
}

/** A base URL that carries a query of its own: the call's query merged into it by the URL. */
function withQuery(href: string, query: CallQuery | undefined): { origin: string; path: string } {
  const url = new URL(href);
  for (const k in query ?? {}) appendParam(url.searchParams, k, (query as CallQuery)[k]);
  return { origin: url.origin, path: `${url.pathname}${url.search}` };
}

/** The headers that say who asks: the API key, or the admin token and the team (several teams). */
function authHeaders(o: ControlOptions): Record<string, string> {
  // A key names its own team: X-Team-ID goes only with the admin token.
  if (o.team?.viaAdminToken && o.adminToken)
    return { "x-admin-token": o.adminToken, "x-team-id": o.team.id };
  if (!o.apiKey) return {};
  return o.authStyle === "bearer"
    ? { authorization: `Bearer ${o.apiKey}` }
    : { [o.authHeader.toLowerCase()]: o.apiKey };
}

/** Dispatcher, auth, retries and error typing of the control channel, shared by its clients. */
export class ControlTransport {
  readonly secrets: Secrets;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly clock: Clock;
  private readonly base: string;
  private readonly authHeaders: Record<string, string>;
  /** Call paths parsed below the base URL (see target). */
  private readonly targets = new Map<string, { origin: string; path: string; search: string }>();

  constructor(private readonly o: ControlOptions) {
    this.ownsDispatcher = !o.dispatcher;
    this.dispatcher = o.dispatcher ?? (o.envProxy ? new EnvHttpProxyAgent() : new Agent());
    this.clock = o.clock ?? systemClock;
    this.base = o.apiUrl.replace(/\/+$/, "");
    this.secrets = o.secrets ?? new Secrets();
    this.secrets.add(o.apiKey);
    this.secrets.add(o.adminToken);
    this.authHeaders = authHeaders(o);
  }

  /**
   * The one way out of the channel for an error: every secret scrubbed from its message, stack,
   * excerpt and cause (in place; the error is returned).
   */
  scrubbed<E>(err: E): E {
    return this.secrets.scrubError(err);
  }

  /** Reports a body that arrived whole but could not be decoded. */
  badBody(endpoint: string, method: string): void {
    this.o.onBadBody?.(endpoint, method);
  }

  /**
   * One logical call: GETs are retried with backoff; mutating calls are attempted exactly once.
   * Every attempt waits for a token of the shared limiter first. A 429 or 503 with Retry-After
   * holds this endpoint for what the platform asked (up to maxRetryAfterMs); the limiter holds
   * every caller only when several endpoints are held at once.
   */
  async send(call: Call, caller: Caller = "poll"): Promise<Reply> {
    const attempts = call.method === "GET" ? 1 + Math.max(0, call.retries ?? this.o.retries) : 1;
    const backoff = {
      baseMs: BACKOFF_BASE_MS,
      capMs: BACKOFF_CAP_MS,
      random: this.o.random ?? Math.random,
    };
    const sleep = this.o.sleep ?? ((ms: number) => sleepTimer(timerMs(ms)));
    // Bounded by `attempts`: every iteration either returns, throws, or counts one attempt.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.o.limiter?.acquire(caller, {
          endpoint: call.endpoint,
          ...(call.reserve ? { reserve: true } : {}),
          ...(call.background ? { background: true } : {}),
          // The poll never waits out a hold longer than a request may take: its tick must end.
          ...(caller === "poll"
            ? {
                maxHoldWaitMs: this.o.timeoutMs,
                onHeld: (ms: number) => new PlatformHeldError(call.endpoint, call.method, ms),
              }
            : {}),
        });
        return await this.once(call);
      } catch (err) {
        const asked = askedToWait(err, this.o.maxRetryAfterMs);
        if (asked !== undefined) this.o.limiter?.holdOff(asked, call.endpoint);
        if (attempt >= attempts || !isRetryable(err)) throw this.scrubbed(err);
        // With a limiter the endpoint's hold delays the next attempt; without, this sleep.
        const own = this.o.limiter ? undefined : asked;
        await sleep(backoffDelay(attempt, backoff, own, this.o.maxRetryAfterMs));
      }
    }
  }

  /**
   * Closes the dispatcher when the transport made it; an injected one belongs to the caller.
   * `abandon`: requests still in flight are cut (destroyed), not waited for.
   */
  async close(abandon = false): Promise<void> {
    if (!this.ownsDispatcher) return;
    await (abandon ? this.dispatcher.destroy() : this.dispatcher.close());
  }

  private async once(call: Call): Promise<Reply> {
    const { method } = call;
    const { origin, path } = this.target(call);
    const headers: Record<string, string> = { accept: "application/json", ...this.authHeaders };
    if (call.admin && this.o.adminToken) headers["x-admin-token"] = this.o.adminToken;
    let payload: string | undefined;
    if (call.body !== undefined) {
      payload = JSON.stringify(call.body);
      headers["content-type"] = "application/json";
    }
    const started = this.clock.now();
    let status: number | undefined;
    let headersMs: number | undefined;
    try {
      // The whole exchange bounded by timeoutMs, as every other call of the daemon is.
      const res = await requestBuffered(this.dispatcher, {
        origin,
        path,
        method,
        headers,
        ...(payload !== undefined ? { body: payload } : {}),
        timeoutMs: this.o.timeoutMs,
        maxBodyBytes: this.o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
        onHead: (statusCode) => {
          status = statusCode;
          headersMs = this.clock.now() - started;
        },
      });
      const reply = this.interpret(call, res.statusCode, res.headers, res.body);
      this.report(call, started, status);
      return reply;
    } catch (err) {
      const e = this.typed(call, err, headersMs);
      const expected = call.notFoundExpected === true && e instanceof PlatformNotFoundError;
      this.report(call, started, status, expected ? undefined : e);
      throw e;
    }
  }

  /**
   * Origin and encoded path of a call: the path parsed below the base URL once per distinct path
   * (as `new URL` reads it), the query encoded as URLSearchParams encodes it.
   */
  private target(call: Call): { origin: string; path: string } {
    const prefix = call.root ? "" : (this.o.apiPrefix ?? API_PREFIX);
    const key = `${prefix}${call.path}`;
    let t = this.targets.get(key);
    if (t === undefined) {
      const url = new URL(`${this.base}${key}`);
      t = { origin: url.origin, path: url.pathname, search: url.search };
      if (this.targets.size >= TARGETS_MAX) this.targets.clear();
      this.targets.set(key, t);
    }
    if (t.search !== "") return withQuery(`${this.base}${key}`, call.query);
    const query = queryString(call.query);
    return { origin: t.origin, path: query === "" ? t.path : `${t.path}?${query}` };
  }

  /** Status and body of one response -> a Reply, or the typed error it stands for. */
  private interpret(call: Call, status: number, headers: Reply["headers"], raw: Buffer): Reply {
    const { method, endpoint } = call;
    const text = raw.toString("utf8");
    if (!call.anyStatus && (status < 200 || status >= 300)) {
      if (status === 404) throw new PlatformNotFoundError(endpoint, method);
      const after = parseRetryAfter(header(headers, "retry-after"), this.clock.now());
      throw new PlatformHttpError(endpoint, method, status, excerpt(text, this.secrets), after);
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
  private typed(call: Call, err: unknown, headersMs?: number): Error {
    const { method, endpoint } = call;
    if (err instanceof PlatformHttpError || err instanceof PlatformNotFoundError) return err;
    if (err instanceof PlatformBodyError) return err;
    if (isTimeout(err))
      return new PlatformTimeoutError(endpoint, method, this.o.timeoutMs, headersMs);
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

function header(
  h: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * How long the platform asked everyone to wait: the Retry-After of a 429 or 503, capped.
 * Undefined for any other failure.
 */
function askedToWait(err: unknown, capMs: number | undefined): number | undefined {
  if (!(err instanceof PlatformHttpError) || err.retryAfterMs === undefined) return undefined;
  if (err.status !== 429 && err.status !== 503) return undefined;
  return Math.min(err.retryAfterMs, capMs ?? BACKOFF_CAP_MS);
}
