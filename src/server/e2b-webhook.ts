// POST /webhooks/e2b: E2B's sandbox lifecycle webhook deliveries. The signature (e2b-signature,
// version v1 in e2b-signature-version) is E2B's documented one: SHA-256 of the signing secret
// followed by the raw body, base64url without padding (e2b-dev/docs lifecycle-events-webhooks.mdx).
// It is checked over the raw bytes before anything is parsed; each event goes to the shared sink,
// which de-duplicates on the event id with the events collector. Anyone who reaches the route can
// post to it, so the deliveries in flight are bounded in number and bytes as a whole
// (delivery-reads.ts), and each kind of refusal is logged at most once a minute.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { LifecycleEvent, LifecycleEventSink } from "../platform/events.js";
import type { Clock } from "../util/clock.js";
import { InflightBudget } from "../util/inflight-budget.js";
import { LogLimiter } from "../util/log-limiter.js";
import type { Route, RouteRefusal } from "../util/route.js";
import { type BodyLimits, type Bound, DeliveryReads } from "./delivery-reads.js";
import {
  type DeliveryResult,
  type WebhookFamilies,
  webhookFamilies,
} from "./e2b-webhook-families.js";
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
  const receiver = new E2bWebhookReceiver(o);
  return {
    method: "POST",
    path: E2B_WEBHOOK_PATH,
    // E2B cannot send the listener's credentials: open only when the setting says so.
    auth: "exemptable",
    exempt: o.authExempt,
    acting: false,
    description: "E2B lifecycle webhook deliveries (signed), into the event ledger",
    handler: (req, _url, res) => receiver.handle(req, res),
    refused: (why) => receiver.refused(why),
  };
}

/** The deliveries' handling: the bounded read, the signature, then the events into the sink. */
class E2bWebhookReceiver {
  private readonly budget: InflightBudget;
  private readonly reads: DeliveryReads;
  private readonly families: WebhookFamilies;
  // Every refusal an unsigned caller can cause is one line per reason and minute, with a count.
  private readonly warnings: LogLimiter;

  constructor(private readonly o: E2bWebhookOptions) {
    const { limits } = o;
    this.budget = o.budget ?? new InflightBudget(limits.maxInFlight, limits.maxInFlightBytes);
    this.reads = new DeliveryReads(this.budget);
    this.families = webhookFamilies({ ...o, path: E2B_WEBHOOK_PATH }, this.budget);
    this.warnings = new LogLimiter({ intervalMs: WARN_INTERVAL_MS, now: () => o.clock.now() });
  }

  // The server answers other methods (405) from the record, and tells `refused` of them.
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { limits } = this.o;
    const ids = deliveryIds(req);
    const ticket = this.reads.enter();
    if (!ticket) return this.busy(req, res, ids, "deliveries");
    try {
      const body = await this.reads.read(req, limits, ticket);
      // The sender went away mid-body: nobody is left to answer.
      if (body === "aborted") return;
      if (body === "deliveries" || body === "bytes") return this.busy(req, res, ids, body);
      if (body === "too_large") {
        this.count("too_large");
        const { maxBodyBytes } = limits;
        this.warn(
          "too_large",
          { ...ids, maxBodyBytes },
          "E2B webhook delivery refused: body too large",
        );
        return refuse(req, res, 413, `body larger than ${maxBodyBytes} bytes\n`);
      }
      if (body === "timeout") {
        this.count("timeout");
        const { bodyTimeoutMs } = limits;
        this.warn(
          "timeout",
          { ...ids, bodyTimeoutMs },
          "E2B webhook delivery refused: body too slow",
        );
        return refuse(req, res, 408, `body not received within ${bodyTimeoutMs} ms\n`);
      }
      if (!verified(this.o.secret(), body, req)) {
        this.count("bad_signature");
        this.warn(
          "bad_signature",
          ids,
          "E2B webhook delivery refused: missing or wrong e2b-signature (check the signing secret file)",
        );
        return send(res, 401, "text/plain; charset=utf-8", "bad signature\n");
      }
      return this.take(body, ids, res);
    } finally {
      ticket.release();
    }
  }

  /** A request the server refused before the handler: a wrong method, or the listener's auth. */
  refused(why: RouteRefusal): void {
    if (why === "method") {
      this.count("method");
      return;
    }
    this.count("unauthorized_listener");
    this.warn(
      "unauthorized_listener",
      {},
      "E2B webhook delivery refused by the listener's auth (401): E2B sends no listener credentials; set webhooks.e2bAuthExempt",
    );
  }

  private count(result: DeliveryResult): void {
    this.families.deliveries.labels(result).inc();
  }

  private warn(reason: DeliveryResult | "dropped", obj: object, msg: string): void {
    this.warnings.warn(this.o.logger, reason, obj, msg);
  }

  private scrub(text: string): string {
    return this.o.secrets ? this.o.secrets.scrub(text) : text;
  }

  private busy(req: IncomingMessage, res: ServerResponse, ids: object, bound: Bound): void {
    const { budget } = this;
    this.count("busy");
    this.warn(
      "busy",
      { ...ids, bound, inFlight: budget.count, inFlightBytes: budget.bytes },
      `E2B webhook delivery refused (503): ${bound} in flight at the bound`,
    );
    res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
    refuse(req, res, 503, `too many deliveries in flight (${bound}); retry\n`);
  }

  /** A verified body: its events into the sink, except the ones older than the sink's horizon. */
  private take(body: Buffer, ids: object, res: ServerResponse): void {
    const parsed = parseDelivery(body, this.o.parse);
    if (typeof parsed === "string") {
      this.count("bad_body");
      const problem = this.scrub(parsed);
      this.warn(
        "bad_body",
        { ...ids, problem },
        "E2B webhook delivery refused: not a lifecycle event",
      );
      send(res, 400, "text/plain; charset=utf-8", `bad event: ${problem}\n`);
      return;
    }
    const { problems } = parsed;
    if (problems.length > 0) {
      // One bad event of a list costs only itself: the others are taken, the answer says which.
      this.families.dropped.labels("invalid").inc(problems.length);
      this.warn(
        "dropped",
        {
          ...ids,
          problems: problems.slice(0, 5).map((p) => this.scrub(p)),
          dropped: problems.length,
        },
        "E2B webhook delivery: events that are not lifecycle events left out",
      );
    }
    const events = this.fresh(parsed.events, ids, res);
    if (!events) return;
    const stale = parsed.events.length - events.length;
    const { accepted, otherShard } = this.sink(events);
    const duplicates = events.length - accepted - otherShard;
    this.count(deliveryResult(accepted, duplicates));
    this.o.logger.debug(
      { ...ids, accepted, duplicates, otherShard, stale },
      "E2B webhook delivery",
    );
    // A duplicate is a success too: E2B retries what it does not see answered 2xx.
    const answer = {
      accepted,
      duplicates,
      ...(otherShard > 0 ? { otherShard } : {}),
      ...(stale > 0 ? { stale } : {}),
      ...(problems.length > 0
        ? { dropped: problems.length, problems: problems.map((p) => this.scrub(p)) }
        : {}),
    };
    send(res, 200, "application/json", `${JSON.stringify(answer)}\n`);
  }

  /**
   * The events not older than the sink's horizon; undefined, once answered 422, when none is. A
   * signed delivery replayed after its id was forgotten would count again: older ones are refused.
   */
  private fresh(
    all: LifecycleEvent[],
    ids: object,
    res: ServerResponse,
  ): LifecycleEvent[] | undefined {
    const horizon = this.o.horizon?.() ?? Number.NEGATIVE_INFINITY;
    const events = all.filter((e) => e.timestamp >= horizon);
    const stale = all.length - events.length;
    if (events.length === 0) {
      this.count("stale");
      const since = new Date(horizon).toISOString();
      this.warn(
        "stale",
        { ...ids, horizon: since },
        "E2B webhook delivery refused: its events are older than the event ids remembered (a replay)",
      );
      send(res, 422, "text/plain; charset=utf-8", `events older than ${since}\n`);
      return undefined;
    }
    if (stale > 0) {
      // A replayed event inside a fresh delivery costs only itself, counted like the invalid ones.
      this.families.dropped.labels("stale").inc(stale);
      this.warn(
        "stale",
        { ...ids, horizon: new Date(horizon).toISOString(), stale },
        "E2B webhook delivery: events older than the event ids remembered left out (a replay)",
      );
    }
    return events;
  }

  /** Each event into the sink, or, another shard's, only shown to it. */
  private sink(events: LifecycleEvent[]): { accepted: number; otherShard: number } {
    const { o } = this;
    let accepted = 0;
    let otherShard = 0;
    // Another shard's sandbox, or a team this exporter does not watch: counted elsewhere.
    for (const e of events) {
      if ((o.own !== undefined && !o.own(e.sandboxId)) || o.sink.owns?.(e) === false) {
        // The shard is applied where records arrive: its own shard counts it (its poll or delivery).
        o.sink.otherShard?.(e);
        otherShard++;
      } else if (o.sink.accept(e, "webhook")) accepted++;
    }
    return { accepted, otherShard };
  }
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
