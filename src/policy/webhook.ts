// Tells a webhook about each notice and action as JSON, off the run: a queue and one sender, so a
// slow or failing endpoint never holds a policy run back.
import { setTimeout as sleep } from "node:timers/promises";
import { type Dispatcher, request } from "undici";
import { timeoutSignal, timerMs } from "../util/duration.js";

/** Events waiting beyond this are dropped, oldest first, and counted. */
const QUEUE_LIMIT = 1_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 10_000;

/** One notice or action, as the webhook receives it. */
export interface PolicyEvent {
  rule: string;
  sandbox: string;
  template: string;
  state: string;
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
      for (let e = this.queue.shift(); e !== undefined; e = this.queue.shift())
        this.o.onResult((await this.deliver(e)) ? "ok" : "failed");
    } finally {
      this.sending = undefined;
    }
  }

  private async deliver(event: PolicyEvent): Promise<boolean> {
    const pause = this.o.sleep ?? ((ms: number) => sleep(timerMs(ms)));
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.o.header) headers[this.o.header.name.toLowerCase()] = this.o.header.value;
    const body = JSON.stringify(event);
    for (let attempt = 0; attempt <= this.o.retries; attempt++) {
      if (attempt > 0) await pause(Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1)));
      try {
        const res = await request(this.o.url, {
          method: "POST",
          headers,
          body,
          dispatcher: this.o.dispatcher,
          signal: timeoutSignal(this.o.timeoutMs),
        });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) return true;
      } catch {
        // A refused connection or a timeout is one failed attempt like a 5xx.
      }
    }
    return false;
  }
}
