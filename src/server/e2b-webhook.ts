// POST /webhooks/e2b: E2B's sandbox lifecycle webhook deliveries. The signature (e2b-signature,
// version v1 in e2b-signature-version) is E2B's documented one: SHA-256 of the signing secret
// followed by the raw body, base64url without padding (e2b-dev/docs lifecycle-events-webhooks.mdx).
// It is checked over the raw bytes before anything is parsed; each event goes to the shared sink,
// which de-duplicates on the event id with the events collector. Anyone who reaches the route can
// post to it, so the deliveries in flight are bounded in number and bytes as a whole
// (delivery-reads.ts), and each kind of refusal is logged at most once a minute.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Counter, Gauge, type Registry } from "prom-client";
import type { LifecycleEvent, LifecycleEventSink } from "../platform/events.js";
import type { Clock } from "../util/clock.js";
import { InflightBudget } from "../util/inflight-budget.js";
import { LogLimiter } from "../util/log-limiter.js";
import type { Route, RouteHandler } from "../util/route.js";
import { type BodyLimits, type Bound, DeliveryReads } from "./delivery-reads.js";
import { send } from "./respond.js";

/** The path E2B is registered to deliver to. */
export const E2B_WEBHOOK_PATH = "/webhooks/e2b";
/** The signature versions E2B's docs define ("currently always v1"). */
const SIGNATURE_VERSIONS: ReadonlySet<string> = new Set(["v1"]);
/** Longest header value (delivery and webhook ids) that goes into a log line. */
const MAX_LOGGED_ID_CHARS = 128;
/** One warning line per reason in this interval, whatever a caller sends; the rest are counted. */
const WARN_INTERVAL_MS = 60_000;
/** What a 503 asks E2B to wait before it delivers again: deliveries in flight end in milliseconds. */
const RETRY_AFTER_SECONDS = 1;

/** Every `result` of the deliveries counter, exported at 0 from the start. */
export const DELIVERY_RESULTS = [
  "accepted",
  "duplicate",
  "bad_signature",
  "bad_body",
  "too_large",
  "timeout",
  "method",
  "busy",
  "stale",
  "unauthorized_listener",
  "other_shard",
] as const;
export type DeliveryResult = (typeof DELIVERY_RESULTS)[number];

/** Every `reason` of the dropped-events counter, exported at 0 from the start. */
export const DROP_REASONS = ["invalid", "stale"] as const;

/**
 * What one delivery (413 past its size, 408 past its time) and all of them together may hold (the
 * webhooks settings).
 */
export interface WebhookLimits extends BodyLimits {
  /** Deliveries read at once; one more is answered 503 at once. */
  maxInFlight: number;
  /** Body bytes all deliveries in flight hold together; past it 503 at once. */
  maxInFlightBytes: number;
}

/** What the receiver needs; everything is injected. */
export interface E2bWebhookOptions {
  /** The current signing secret (read again on reload); "" refuses every delivery. */
  secret: () => string;
  sink: LifecycleEventSink;
  /**
   * Whether a sandbox is this shard's (shard.index of shard.total): another shard's event is not
   * counted here, only the team id it names is learned. Absent: every event is this exporter's.
   */
  own?: (sandboxId: string) => boolean;
  /** One raw event to a LifecycleEvent; throws an error naming the field when it cannot. */
  parse: (raw: unknown) => LifecycleEvent;
  limits: WebhookLimits;
  /** webhooks.e2bAuthExempt: E2B cannot send the listener's credentials, so the route may be opened. */
  authExempt: boolean;
  /** The budget of the deliveries in flight (tests look at it); default one of `limits`. */
  budget?: InflightBudget;
  /**
   * The sink's horizon (epoch ms): an event older than it may have been counted already and its id
   * forgotten since, so it is refused as a replay. Absent: every time is taken.
   */
  horizon?: () => number;
  clock: Clock;
  registry: Registry;
  namespace: string;
  logger: { warn(obj: object, msg: string): void; debug(obj: object, msg: string): void };
  /** Scrubs secret values from texts that leave the process (the 400 answer, log lines). */
  secrets?: { scrub(text: string): string };
}

/**
 * POST /webhooks/e2b as a route record: exemptable from the listener's auth, not acting. Answers as
 * soon as the events are in the sink; the requests the server refuses before it are counted too.
 */
export function e2bWebhookRoute(o: E2bWebhookOptions): Route {
  const { limits } = o;
  const budget = o.budget ?? new InflightBudget(limits.maxInFlight, limits.maxInFlightBytes);
  const reads = new DeliveryReads(budget);
  const scrub = (t: string): string => (o.secrets ? o.secrets.scrub(t) : t);
  // Every refusal an unsigned caller can cause is one line per reason and minute, with a count.
  const warnings = new LogLimiter({ intervalMs: WARN_INTERVAL_MS, now: () => o.clock.now() });
  const warn = (reason: DeliveryResult | "dropped", obj: object, msg: string): void =>
    warnings.warn(o.logger, reason, obj, msg);
  const deliveries = new Counter({
    name: `${o.namespace}_webhook_deliveries_total`,
    help: `E2B lifecycle webhook deliveries to POST ${E2B_WEBHOOK_PATH}, by result (${DELIVERY_RESULTS.join(", ")}).`,
    labelNames: ["result"],
    registers: [o.registry],
  });
  for (const r of DELIVERY_RESULTS) deliveries.labels(r).inc(0);
  const dropped = new Counter({
    name: `${o.namespace}_webhook_events_dropped_total`,
    help: `Events of a list delivered to POST ${E2B_WEBHOOK_PATH} left out while the rest of the list was taken, by reason (invalid: not a lifecycle event; stale: older than the event ids remembered, a replay).`,
    labelNames: ["reason"],
    registers: [o.registry],
  });
  for (const r of DROP_REASONS) dropped.labels(r).inc(0);
  new Gauge({
    name: `${o.namespace}_webhook_inflight_bytes`,
    help: `Body bytes held by the deliveries to POST ${E2B_WEBHOOK_PATH} being read, counted as they arrive; at most webhooks.maxInFlightBytes.`,
    registers: [o.registry],
    collect() {
      this.set(budget.bytes);
    },
  });
  new Gauge({
    name: `${o.namespace}_webhook_inflight_deliveries`,
    help: `Deliveries to POST ${E2B_WEBHOOK_PATH} being read now; at most webhooks.maxInFlight.`,
    registers: [o.registry],
    collect() {
      this.set(budget.count);
    },
  });

  const busy = (req: IncomingMessage, res: ServerResponse, ids: object, bound: Bound): void => {
    deliveries.labels("busy").inc();
    warn(
      "busy",
      { ...ids, bound, inFlight: budget.count, inFlightBytes: budget.bytes },
      `E2B webhook delivery refused (503): ${bound} in flight at the bound`,
    );
    res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
    refuse(req, res, 503, `too many deliveries in flight (${bound}); retry\n`);
  };

  // The server answers other methods (405) from the record, and tells `refused` of them.
  const handler: RouteHandler = async (req, _url, res) => {
    const ids = deliveryIds(req);
    const ticket = reads.enter();
    if (!ticket) return busy(req, res, ids, "deliveries");
    try {
      const body = await reads.read(req, limits, ticket);
      // The sender went away mid-body: nobody is left to answer.
      if (body === "aborted") return;
      if (body === "deliveries" || body === "bytes") return busy(req, res, ids, body);
      if (body === "too_large") {
        deliveries.labels("too_large").inc();
        const { maxBodyBytes } = limits;
        warn("too_large", { ...ids, maxBodyBytes }, "E2B webhook delivery refused: body too large");
        return refuse(req, res, 413, `body larger than ${maxBodyBytes} bytes\n`);
      }
      if (body === "timeout") {
        deliveries.labels("timeout").inc();
        const { bodyTimeoutMs } = limits;
        warn("timeout", { ...ids, bodyTimeoutMs }, "E2B webhook delivery refused: body too slow");
        return refuse(req, res, 408, `body not received within ${bodyTimeoutMs} ms\n`);
      }
      if (!verified(o.secret(), body, req)) {
        deliveries.labels("bad_signature").inc();
        warn(
          "bad_signature",
          ids,
          "E2B webhook delivery refused: missing or wrong e2b-signature (check the signing secret file)",
        );
        return send(res, 401, "text/plain; charset=utf-8", "bad signature\n");
      }
      return take(body, ids, res);
    } finally {
      ticket.release();
    }
  };

  /** A verified body: its events into the sink, except the ones older than the sink's horizon. */
  const take = (body: Buffer, ids: object, res: ServerResponse): void => {
    const parsed = parseDelivery(body, o.parse);
    if (typeof parsed === "string") {
      deliveries.labels("bad_body").inc();
      const problem = scrub(parsed);
      warn("bad_body", { ...ids, problem }, "E2B webhook delivery refused: not a lifecycle event");
      send(res, 400, "text/plain; charset=utf-8", `bad event: ${problem}\n`);
      return;
    }
    const { problems } = parsed;
    if (problems.length > 0) {
      // One bad event of a list costs only itself: the others are taken, the answer says which.
      dropped.labels("invalid").inc(problems.length);
      warn(
        "dropped",
        { ...ids, problems: problems.slice(0, 5).map(scrub), dropped: problems.length },
        "E2B webhook delivery: events that are not lifecycle events left out",
      );
    }
    // A signed delivery replayed after its id was forgotten would count again: older ones are refused.
    const horizon = o.horizon?.() ?? Number.NEGATIVE_INFINITY;
    const events = parsed.events.filter((e) => e.timestamp >= horizon);
    const stale = parsed.events.length - events.length;
    if (events.length === 0) {
      deliveries.labels("stale").inc();
      const since = new Date(horizon).toISOString();
      warn(
        "stale",
        { ...ids, horizon: since },
        "E2B webhook delivery refused: its events are older than the event ids remembered (a replay)",
      );
      send(res, 422, "text/plain; charset=utf-8", `events older than ${since}\n`);
      return;
    }
    if (stale > 0) {
      // A replayed event inside a fresh delivery costs only itself, counted like the invalid ones.
      dropped.labels("stale").inc(stale);
      warn(
        "stale",
        { ...ids, horizon: new Date(horizon).toISOString(), stale },
        "E2B webhook delivery: events older than the event ids remembered left out (a replay)",
      );
    }
    let accepted = 0;
    let otherShard = 0;
    for (const e of events) {
      if (o.own !== undefined && !o.own(e.sandboxId)) {
        // The shard is applied where records arrive: its own shard counts it (its poll or delivery).
        o.sink.otherShard?.(e);
        otherShard++;
      } else if (o.sink.accept(e, "webhook")) accepted++;
    }
    const duplicates = events.length - accepted - otherShard;
    deliveries.labels(deliveryResult(accepted, duplicates)).inc();
    o.logger.debug({ ...ids, accepted, duplicates, otherShard, stale }, "E2B webhook delivery");
    // A duplicate is a success too: E2B retries what it does not see answered 2xx.
    const answer = {
      accepted,
      duplicates,
      ...(otherShard > 0 ? { otherShard } : {}),
      ...(stale > 0 ? { stale } : {}),
      ...(problems.length > 0 ? { dropped: problems.length, problems: problems.map(scrub) } : {}),
    };
    send(res, 200, "application/json", `${JSON.stringify(answer)}\n`);
  };

  return {
    method: "POST",
    path: E2B_WEBHOOK_PATH,
    // E2B cannot send the listener's credentials: open only when the setting says so.
    auth: "exemptable",
    exempt: o.authExempt,
    acting: false,
    description: "E2B lifecycle webhook deliveries (signed), into the event ledger",
    handler,
    refused(why) {
      if (why === "method") {
        deliveries.labels("method").inc();
        return;
      }
      deliveries.labels("unauthorized_listener").inc();
      warn(
        "unauthorized_listener",
        {},
        "E2B webhook delivery refused by the listener's auth (401): E2B sends no listener credentials; set webhooks.e2bAuthExempt",
      );
    },
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

/** 413, 408 or 503, then the connection is closed: the rest of the body is never read. */
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

/** The result of a delivery whose events were all taken: new, seen before, or another shard's. */
function deliveryResult(accepted: number, duplicates: number): DeliveryResult {
  if (accepted > 0) return "accepted";
  return duplicates > 0 ? "duplicate" : "other_shard";
}
