// A request to a service on a sandbox port through the data-plane proxy, as a user's own users
// reach it (`{port}-{id}.{domain}`, E2B's SDK `getHost(port)`): routed as the agent calls are.
import { type Dispatcher, request } from "undici";
import { deadline, timerMs } from "../../util/duration.js";
import { ExporterError } from "../../util/errors.js";
import {
  BodyTooLargeError,
  isTimeout,
  PlatformBodyError,
  PlatformNetworkError,
  PlatformTimeoutError,
  readCapped,
} from "../http-errors.js";

/** Header E2B's proxy reads the traffic access token of a restricted sandbox from (lower case). */
export const TRAFFIC_TOKEN_HEADER = "e2b-traffic-access-token";
/** A service's answer is read this far: the probe checks a nonce, not a download. */
export const DEFAULT_MAX_PORT_BODY_BYTES = 64 * 1024;

/** One request to a sandbox port. */
export interface PortRequest {
  port: number;
  /** Path and query, starting with `/`. */
  path: string;
  method: string;
  headers?: Readonly<Record<string, string>>;
  /** Sent as `e2b-traffic-access-token` (a sandbox created with allowPublicTraffic false). */
  trafficToken?: string;
  signal?: AbortSignal;
  /** Bound on the whole exchange; default the data channel's timeout. */
  timeoutMs?: number;
  maxBodyBytes?: number;
}

/** The service's (or the proxy's) answer, with its timings in ms from sending. */
export interface PortAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** Until the status line and headers arrived. */
  firstByteMs: number;
  totalMs: number;
}

/** The answer's body is longer than the request reads (`maxBodyBytes`); reading stopped there. */
export class PortBodyTooLargeError extends PlatformBodyError {
  constructor(
    endpoint: string,
    method: string,
    readonly maxBytes: number,
    /** Its Content-Length, when it announced one over the cap (nothing was read then). */
    readonly announcedBytes?: number,
  ) {
    super(
      endpoint,
      method,
      announcedBytes === undefined
        ? `answer longer than ${maxBytes} bytes; reading stopped there`
        : `answer announced ${announcedBytes} bytes (Content-Length), over the ${maxBytes} read at most; not read`,
    );
  }
}

/** Where the request goes: its URL and the routing headers that name the sandbox and port. */
export interface PortTarget {
  url: string;
  routingHeaders: Record<string, string>;
}

/** Sends `req` through `dispatcher`; transport failures are typed (network, timeout, body). */
export async function sendPortRequest(
  dispatcher: Dispatcher,
  target: PortTarget,
  req: PortRequest,
  o: { timeoutMs: number; monotonic: () => number },
): Promise<PortAnswer> {
  const endpoint = `:${req.port}${req.path.split("?")[0] ?? "/"}`;
  const limitMs = req.timeoutMs ?? o.timeoutMs;
  const limit = deadline(limitMs, req.signal);
  const typed = (err: unknown, headersMs?: number): unknown => {
    if (err instanceof ExporterError || req.signal?.aborted) return err;
    if (isTimeout(err) || limit.signal.aborted)
      return new PlatformTimeoutError(endpoint, req.method, limitMs, headersMs);
    return new PlatformNetworkError(endpoint, req.method, err);
  };
  const headers: Record<string, string> = {
    // The proxy answers a browser with HTML; a probe is no browser and says what it reads.
    accept: "*/*",
    ...req.headers,
    ...target.routingHeaders,
    ...(req.trafficToken ? { [TRAFFIC_TOKEN_HEADER]: req.trafficToken } : {}),
  };
  const sent = o.monotonic();
  try {
    let res: Dispatcher.ResponseData;
    try {
      res = await request(target.url, {
        method: req.method as Dispatcher.HttpMethod,
        headers,
        dispatcher,
        signal: limit.signal,
        headersTimeout: timerMs(limitMs),
        bodyTimeout: timerMs(limitMs),
      });
    } catch (err) {
      throw typed(err);
    }
    const firstByteMs = o.monotonic() - sent;
    const max = req.maxBodyBytes ?? DEFAULT_MAX_PORT_BODY_BYTES;
    const announced = Number(res.headers["content-length"]);
    // A body announced over the cap is refused unread (a HEAD answer announces one it never sends).
    if (req.method !== "HEAD" && announced > max) {
      res.body.destroy();
      throw new PortBodyTooLargeError(endpoint, req.method, max, announced);
    }
    let body: Buffer;
    try {
      body = await readCapped(res.body, max);
    } catch (err) {
      if (err instanceof BodyTooLargeError)
        throw new PortBodyTooLargeError(endpoint, req.method, max);
      // The headers came in time, the body did not: the timeout says so.
      throw typed(err, firstByteMs);
    }
    return {
      status: res.statusCode,
      headers: flatHeaders(res.headers),
      body,
      firstByteMs,
      totalMs: o.monotonic() - sent,
    };
  } finally {
    limit.clear();
  }
}

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}
