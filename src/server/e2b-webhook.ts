// POST /webhooks/e2b: E2B's sandbox lifecycle webhook deliveries. The signature (e2b-signature,
// version v1 in e2b-signature-version) is E2B's documented one: SHA-256 of the signing secret
// followed by the raw body, base64url without padding (e2b-dev/docs lifecycle-events-webhooks.mdx).
// It is checked over the raw bytes before anything is parsed; each event goes to the shared sink,
// which de-duplicates on the event id with the events collector.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Counter, type Registry } from "prom-client";
import type { LifecycleEvent, LifecycleEventSink } from "../platform/events.js";
import { deadline } from "../util/duration.js";
import { type RouteHandler, send } from "./server.js";

/** The path E2B is registered to deliver to. */
export const E2B_WEBHOOK_PATH = "/webhooks/e2b";
/** Largest delivery read by default; one event is well under 4 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;
/** The signature versions E2B's docs define ("currently always v1"). */
const SIGNATURE_VERSIONS: ReadonlySet<string> = new Set(["v1"]);
/** Longest a delivery's body may take to arrive by default: one event is a few KiB. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;
/** Longest header value (delivery and webhook ids) that goes into a log line. */
const MAX_LOGGED_ID_CHARS = 128;

/** Every `result` of the deliveries counter, exported at 0 from the start. */
export const DELIVERY_RESULTS = [
  "accepted",
  "duplicate",
  "bad_signature",
  "bad_body",
  "too_large",
  "timeout",
  "method",
] as const;
export type DeliveryResult = (typeof DELIVERY_RESULTS)[number];

/** What the receiver needs; everything is injected. */
export interface E2bWebhookOptions {
  /** The current signing secret (read again on reload); "" refuses every delivery. */
  secret: () => string;
  sink: LifecycleEventSink;
  /** One raw event to a LifecycleEvent; throws an error naming the field when it cannot. */
  parse: (raw: unknown) => LifecycleEvent;
  maxBodyBytes?: number;
  /** Longest the body may take to arrive (default 10 s): a sender trickling bytes is cut off. */
  bodyTimeoutMs?: number;
  registry: Registry;
  namespace: string;
  logger: { warn(obj: object, msg: string): void; debug(obj: object, msg: string): void };
  /** Scrubs secret values from texts that leave the process (the 400 answer, log lines). */
  secrets?: { scrub(text: string): string };
}

/** The RouteHandler for POST /webhooks/e2b. Answers as soon as the events are in the sink. */
export function e2bWebhookRoute(o: E2bWebhookOptions): RouteHandler {
  const max = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const bodyTimeoutMs = o.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  const scrub = (t: string): string => (o.secrets ? o.secrets.scrub(t) : t);
  const deliveries = new Counter({
    name: `${o.namespace}_webhook_deliveries_total`,
    help: `E2B lifecycle webhook deliveries to POST ${E2B_WEBHOOK_PATH}, by result (accepted, duplicate, bad_signature, bad_body, too_large, timeout, method).`,
    labelNames: ["result"],
    registers: [o.registry],
  });
  for (const r of DELIVERY_RESULTS) deliveries.labels(r).inc(0);
  const dropped = new Counter({
    name: `${o.namespace}_webhook_events_dropped_total`,
    help: `Events of a list delivered to POST ${E2B_WEBHOOK_PATH} that were not lifecycle events: left out, the rest of the list taken.`,
    registers: [o.registry],
  });
  // A wrong secret fails every delivery: warned once, then quiet until a delivery verifies again.
  let warnedBadSignature = false;

  return async (req, _url, res) => {
    if (req.method !== "POST") {
      deliveries.labels("method").inc();
      res.setHeader("Allow", "POST");
      return send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
    }
    const ids = deliveryIds(req);
    const body = await readCapped(req, max, bodyTimeoutMs);
    // The sender went away mid-body: nobody is left to answer.
    if (body === "aborted") return;
    if (body === "too_large") {
      deliveries.labels("too_large").inc();
      o.logger.warn({ ...ids, maxBodyBytes: max }, "E2B webhook delivery refused: body too large");
      return refuse(req, res, 413, `body larger than ${max} bytes\n`);
    }
    if (body === "timeout") {
      deliveries.labels("timeout").inc();
      o.logger.warn({ ...ids, bodyTimeoutMs }, "E2B webhook delivery refused: body too slow");
      return refuse(req, res, 408, `body not received within ${bodyTimeoutMs} ms\n`);
    }
    if (!verified(o.secret(), body, req)) {
      deliveries.labels("bad_signature").inc();
      const log = warnedBadSignature ? o.logger.debug : o.logger.warn;
      log.call(
        o.logger,
        ids,
        "E2B webhook delivery refused: missing or wrong e2b-signature (check the signing secret file)",
      );
      warnedBadSignature = true;
      return send(res, 401, "text/plain; charset=utf-8", "bad signature\n");
    }
    warnedBadSignature = false;
    const parsed = parseDelivery(body, o.parse);
    if (typeof parsed === "string") {
      deliveries.labels("bad_body").inc();
      const problem = scrub(parsed);
      o.logger.warn({ ...ids, problem }, "E2B webhook delivery refused: not a lifecycle event");
      return send(res, 400, "text/plain; charset=utf-8", `bad event: ${problem}\n`);
    }
    const { events, problems } = parsed;
    if (problems.length > 0) {
      // One bad event of a list costs only itself: the others are taken, the answer says which.
      dropped.inc(problems.length);
      o.logger.warn(
        { ...ids, problems: problems.slice(0, 5).map(scrub), dropped: problems.length },
        "E2B webhook delivery: events that are not lifecycle events left out",
      );
    }
    let accepted = 0;
    for (const e of events) if (o.sink.accept(e, "webhook")) accepted++;
    const duplicates = events.length - accepted;
    deliveries.labels(accepted > 0 ? "accepted" : "duplicate").inc();
    o.logger.debug({ ...ids, accepted, duplicates }, "E2B webhook delivery");
    // A duplicate is a success too: E2B retries what it does not see answered 2xx.
    const answer = {
      accepted,
      duplicates,
      ...(problems.length > 0 ? { dropped: problems.length, problems: problems.map(scrub) } : {}),
    };
    return send(res, 200, "application/json", `${JSON.stringify(answer)}\n`);
  };
}

/** E2B's signature of `body` under `secret`: base64url SHA-256 of secret then body, no padding. */
export function e2bSignature(secret: string, body: Buffer | string): string {
  return createHash("sha256").update(secret, "utf8").update(body).digest("base64url");
}

/** True when the request carries a known signature version and the signature of `body`. */
function verified(secret: string, body: Buffer, req: IncomingMessage): boolean {
  const version = header(req, "e2b-signature-version");
  const given = header(req, "e2b-signature");
  if (secret === "" || given === undefined || version === undefined) return false;
  if (!SIGNATURE_VERSIONS.has(version.trim().toLowerCase())) return false;
  // The docs' form is base64url without padding; the standard alphabet or padding is the same digest.
  const normalized = given.trim().replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const expected = Buffer.from(e2bSignature(secret, body));
  const actual = Buffer.from(normalized);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * The events of a verified body (one event, or a list of them) and what is wrong with the items of
 * a list that are not events; or, when nothing in it is an event, what is wrong with it.
 */
function parseDelivery(
  body: Buffer,
  parse: (raw: unknown) => LifecycleEvent,
): { events: LifecycleEvent[]; problems: string[] } | string {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString("utf8"));
  } catch {
    return "the body is not JSON";
  }
  const items = Array.isArray(raw) ? raw : [raw];
  if (items.length === 0) return "an empty list of events";
  const events: LifecycleEvent[] = [];
  const problems: string[] = [];
  for (const [i, item] of items.entries()) {
    try {
      events.push(parse(item));
    } catch (err) {
      const message = err instanceof Error ? err.message : "not a lifecycle event";
      problems.push(Array.isArray(raw) ? `[${i}] ${message}` : message);
    }
  }
  return events.length > 0 ? { events, problems } : (problems[0] as string);
}

/**
 * The whole body, or "too_large" as soon as it is longer than `max` (a declared Content-Length is
 * believed first; reading stops there, nothing more is buffered), "timeout" when it has not all
 * arrived within `timeoutMs`, or "aborted" when the connection broke first.
 */
function readCapped(
  req: IncomingMessage,
  max: number,
  timeoutMs: number,
): Promise<Buffer | "too_large" | "timeout" | "aborted"> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve("too_large");
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const limit = deadline(timeoutMs);
    const onTimeout = (): void => {
      done();
      req.pause();
      resolve("timeout");
    };
    limit.signal.addEventListener("abort", onTimeout, { once: true });
    const done = (): void => {
      limit.clear();
      limit.signal.removeEventListener("abort", onTimeout);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size > max) {
        done();
        req.pause();
        resolve("too_large");
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (): void => {
      done();
      resolve("aborted");
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/** 413 or 408, then the connection is closed: the rest of the body is never read. */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, text: string): void {
  res.setHeader("Connection", "close");
  res.once("finish", () => req.socket.destroySoon());
  send(res, status, "text/plain; charset=utf-8", text);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** E2B's delivery headers, cut short, for log lines. */
function deliveryIds(req: IncomingMessage): { webhookId?: string; deliveryId?: string } {
  const webhookId = header(req, "e2b-webhook-id")?.slice(0, MAX_LOGGED_ID_CHARS);
  const deliveryId = header(req, "e2b-delivery-id")?.slice(0, MAX_LOGGED_ID_CHARS);
  return {
    ...(webhookId !== undefined ? { webhookId } : {}),
    ...(deliveryId !== undefined ? { deliveryId } : {}),
  };
}
