// Tells a webhook about each notice and action as JSON, off the run: a queue and one sender, so a
// slow or failing endpoint never holds a policy run back.
import { setTimeout as sleep } from "node:timers/promises";
import { type Dispatcher, request } from "undici";
import { deadline, timerMs } from "../util/duration.js";
import { ExporterError } from "../util/errors.js";
import type { Secrets } from "../util/secrets.js";

/** Events waiting beyond this are dropped, oldest first, and counted. */
const QUEUE_LIMIT = 1_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 10_000;

/** One notice or action, as the webhook receives it. */
export interface PolicyEvent {
  rule: string;
  /** What the rule acts on: sandbox (absent, for the bodies' old shape) or snapshot. */
  target?: "snapshot";
  /** A sandbox rule's sandbox, its template and state. */
  sandbox?: string;
  template?: string;
  state?: string;
  /** A snapshot rule's snapshot and its names. */
  snapshot?: string;
  names?: readonly string[];
  action: string;
  dryRun: boolean;
  /** `notice`, `dry_run`, `done` or `failed` (`pending` and `skipped_*` on /status only). */
  result: string;
  reason: string;
  /** ISO time of the decision. */
  at: string;
}

/** Settings of the webhook. */
export interface WebhookOptions {
  url: string;
  /** Sent with every delivery (e.g. Authorization), read from a file by the caller. */
  header?: { name: string; value: string };
  timeoutMs: number;
  /** Extra attempts after a failed delivery. */
  retries: number;
  dispatcher: Dispatcher;
  /** One count per event: delivered, failed after its retries, or dropped from a full queue. */
  onResult: (result: "ok" | "failed" | "dropped") => void;
  sleep?: (ms: number) => Promise<void>;
  /** Where each failed delivery is told (pino's Logger fits). */
  logger?: { warn(obj: object, msg: string): void };
  /** Scrubs the body and the logged errors (a rule name or reason may quote a secret). */
  secrets?: Secrets;
}

/** A delivery that failed after its retries: the last attempt's status or transport error. */
export class WebhookDeliveryError extends ExporterError {
  constructor(
    readonly attempts: number,
    readonly status: number | undefined,
    cause?: unknown,
  ) {
    const why = status === undefined ? "no answer" : `HTTP ${status}`;
    super("ERR_WEBHOOK_DELIVERY", `webhook delivery failed after ${attempts} attempt(s): ${why}`, {
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

/** Delivers policy events one at a time, in order, with bounded retries. */
export class PolicyWebhook {
  private readonly queue: PolicyEvent[] = [];
  private sending: Promise<void> | undefined;

  constructor(private readonly o: WebhookOptions) {}

  /** Queues `event`; returns at once. */
  send(event: PolicyEvent): void {
    if (this.queue.length >= QUEUE_LIMIT) {
      this.queue.shift();
      this.o.onResult("dropped");
    }
    this.queue.push(event);
    this.sending ??= this.drain();
  }

  /** Resolves when the queue is empty (tests, shutdown). */
  async idle(): Promise<void> {
    await this.sending;
  }

  private async drain(): Promise<void> {
    try {
      // Each pass removes one event; sends are the only way the queue grows.
      for (let e = this.queue.shift(); e !== undefined; e = this.queue.shift()) {
        const failed = await this.deliver(e);
        if (failed) this.logFailure(e, failed);
        this.o.onResult(failed ? "failed" : "ok");
      }
    } finally {
      this.sending = undefined;
    }
  }

  /** Undefined when delivered; the failure after the last attempt otherwise. */
  private async deliver(event: PolicyEvent): Promise<WebhookDeliveryError | undefined> {
    const pause = this.o.sleep ?? ((ms: number) => sleep(timerMs(ms)));
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.o.header) headers[this.o.header.name.toLowerCase()] = this.o.header.value;
    const json = JSON.stringify(event);
    // The body leaves the process: the one scrubber sees it (its JSON-escaped forms included).
    const body = this.o.secrets ? this.o.secrets.scrub(json) : json;
    let status: number | undefined;
    let cause: unknown;
    const attempts = this.o.retries + 1;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await pause(Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1)));
      const limit = deadline(this.o.timeoutMs);
      try {
        const res = await request(this.o.url, {
          method: "POST",
          headers,
          body,
          dispatcher: this.o.dispatcher,
          signal: limit.signal,
        });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) return undefined;
        status = res.statusCode;
        cause = undefined;
      } catch (err) {
        // A refused connection or a timeout is one failed attempt like a 5xx.
        status = undefined;
        cause = err;
      } finally {
        limit.clear();
      }
    }
    return new WebhookDeliveryError(attempts, status, cause);
  }

  /** One warning per event given up: what failed, never the body or the header's value. */
  private logFailure(event: PolicyEvent, err: WebhookDeliveryError): void {
    if (!this.o.logger) return;
    const scrub = (t: string): string => (this.o.secrets ? this.o.secrets.scrub(t) : t);
    this.o.logger.warn(
      {
        err: this.o.secrets ? this.o.secrets.scrubError(err) : err,
        rule: scrub(event.rule),
        ...(event.sandbox !== undefined ? { sandbox: scrub(event.sandbox) } : {}),
        ...(event.snapshot !== undefined ? { snapshot: scrub(event.snapshot) } : {}),
        result: event.result,
      },
      "policy webhook delivery failed",
    );
  }
}
