// E2B's lifecycle webhooks: the registration API (/events/webhooks) and the delivery of every
// event to each enabled webhook that asked for its type, signed and retried as E2B documents.
import { createHash } from "node:crypto";
import { Agent, request } from "undici";
import { z } from "zod";
import type { ApiHandler, SimContext } from "./context.js";
import { rfc3339, type SimEvent, snakeCaseEvent } from "./events.js";
import { uuid } from "./generate.js";
import { BodyTooLargeError, readBody, sendError, sendJson, type Timers } from "./http-io.js";
import { deriveSeed, Prng } from "./prng.js";
import type { RouteDef } from "./router.js";

/** E2B's docs: a failed delivery is tried again, up to 3 attempts, 10 s apart. */
export const WEBHOOK_MAX_ATTEMPTS = 3;
export const WEBHOOK_RETRY_DELAY_MS = 10_000;
/** Deliveries (with their retries) in flight at most; past it an event is dropped and counted. */
export const WEBHOOK_MAX_IN_FLIGHT = 64;
const ATTEMPT_TIMEOUT_MS = 10_000;
const MAX_JSON_BODY = 64 * 1024;
const EVENT_TYPES = [
  "sandbox.lifecycle.created",
  "sandbox.lifecycle.killed",
  "sandbox.lifecycle.paused",
  "sandbox.lifecycle.resumed",
  "sandbox.lifecycle.updated",
  "sandbox.lifecycle.checkpointed",
] as const;

/** How the body is spelled: as the events API answers (`sandboxId`) or as the orchestrator marshals it (`sandbox_id`). */
export type WebhookPayloadStyle = "api" | "snake";

const EventList = z.array(z.enum(EVENT_TYPES));
const CreateBody = z.object({
  name: z.string().default(""),
  url: z.string().url(),
  enabled: z.boolean().default(true),
  events: EventList,
  signatureSecret: z.string().min(1),
});
const PatchBody = z.object({
  name: z.string().optional(),
  url: z.string().url().optional(),
  enabled: z.boolean().optional(),
  events: EventList.optional(),
  signatureSecret: z.string().min(1).optional(),
});

/** A registered webhook; the secret is never answered back. */
export interface SimWebhook {
  id: string;
  teamId: string;
  name: string;
  createdAt: number;
  enabled: boolean;
  url: string;
  events: string[];
  signatureSecret: string;
}

/** One attempt the sender made, for tests and the demo. */
export interface WebhookAttempt {
  webhookId: string;
  eventId: string;
  deliveryId: string;
  attempt: number;
  /** HTTP status, or 0 when the request failed before one. */
  status: number;
}

export interface SimWebhooksOptions {
  teamId: string;
  seed: number;
  timers: Timers;
  now: () => number;
  maxAttempts?: number;
  retryDelayMs?: number;
  maxInFlight?: number;
  payload?: WebhookPayloadStyle;
}

/** E2B's signature: SHA-256 of the secret followed by the raw body, base64url, padding stripped. */
export function webhookSignature(secret: string, body: string): string {
  return createHash("sha256")
    .update(secret + body)
    .digest("base64url");
}

/** The team's webhooks and their sender; deliveries never hold up the request that caused the event. */
export class SimWebhooks {
  readonly hooks = new Map<string, SimWebhook>();
  /** Every attempt so far, oldest first (the last 1,000). */
  readonly attempts: WebhookAttempt[] = [];
  /** Deliveries left out because `maxInFlight` were under way. */
  dropped = 0;
  private readonly options: SimWebhooksOptions;
  private readonly rng: Prng;
  private readonly agent = new Agent({ connections: 8 });
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(options: SimWebhooksOptions) {
    this.options = options;
    this.rng = new Prng(deriveSeed(options.seed, "webhooks"));
  }

  /** Registers a webhook (what POST /events/webhooks does). */
  register(init: z.input<typeof CreateBody>): SimWebhook {
    const body = CreateBody.parse(init);
    const hook: SimWebhook = {
      id: uuid(this.rng),
      teamId: this.options.teamId,
      createdAt: this.options.now(),
      ...body,
    };
    this.hooks.set(hook.id, hook);
    return hook;
  }

  /** Sends `event` to every enabled webhook subscribed to its type. */
  deliver(event: SimEvent): void {
    if (this.closed) return;
    for (const hook of this.hooks.values()) {
      if (!hook.enabled || !hook.events.includes(event.type)) continue;
      if (this.inFlight.size >= (this.options.maxInFlight ?? WEBHOOK_MAX_IN_FLIGHT)) {
        this.dropped++;
        continue;
      }
      const p = this.send({ ...hook }, event).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }
  }

  /** Resolves once every delivery under way (retries included) has ended. */
  async settled(): Promise<void> {
    for (let guard = 0; this.inFlight.size > 0 && guard < 10_000; guard++) {
      await Promise.all([...this.inFlight]);
    }
  }

  /** Stops sending: pending retries are cancelled by the simulator's timers, open requests dropped. */
  async close(): Promise<void> {
    this.closed = true;
    await this.agent.destroy();
  }

  private async send(hook: SimWebhook, event: SimEvent): Promise<void> {
    const payload = this.options.payload === "snake" ? snakeCaseEvent(event) : event;
    const body = JSON.stringify(payload);
    const maxAttempts = this.options.maxAttempts ?? WEBHOOK_MAX_ATTEMPTS;
    for (let attempt = 1; attempt <= maxAttempts && !this.closed; attempt++) {
      if (attempt > 1) {
        const delay = this.options.retryDelayMs ?? WEBHOOK_RETRY_DELAY_MS;
        if (!(await this.options.timers.sleep(delay))) return;
      }
      const deliveryId = uuid(this.rng);
      const status = await this.attempt(hook, body, deliveryId);
      this.attempts.push({ webhookId: hook.id, eventId: event.id, deliveryId, attempt, status });
      if (this.attempts.length > 1000) this.attempts.shift();
      if (status >= 200 && status < 300) return;
    }
  }

  private async attempt(hook: SimWebhook, body: string, deliveryId: string): Promise<number> {
    try {
      const res = await request(hook.url, {
        method: "POST",
        dispatcher: this.agent,
        headers: {
          "content-type": "application/json",
          "e2b-webhook-id": hook.id,
          "e2b-delivery-id": deliveryId,
          "e2b-signature-version": "v1",
          "e2b-signature": webhookSignature(hook.signatureSecret, body),
        },
        body,
        headersTimeout: ATTEMPT_TIMEOUT_MS,
        bodyTimeout: ATTEMPT_TIMEOUT_MS,
      });
      await res.body.dump();
      return res.statusCode;
    } catch {
      return 0;
    }
  }
}

/** A webhook as the API answers it: everything but the secret. */
function render(hook: SimWebhook) {
  return {
    id: hook.id,
    teamId: hook.teamId,
    name: hook.name,
    createdAt: rfc3339(hook.createdAt),
    enabled: hook.enabled,
    url: hook.url,
    events: hook.events,
  };
}

async function readJson<S extends z.ZodType>(
  req: Parameters<ApiHandler>[1],
  schema: S,
): Promise<{ error: string; value?: undefined } | { error?: undefined; value: z.output<S> }> {
  let json: unknown;
  try {
    json = JSON.parse((await readBody(req, MAX_JSON_BODY)).toString("utf8"));
  } catch (err) {
    return {
      error: err instanceof BodyTooLargeError ? err.message : "request body is not valid JSON",
    };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      error: `invalid request body: ${issue?.path.join(".") ?? ""}: ${issue?.message ?? ""}`,
    };
  }
  return { value: parsed.data };
}

function findHook(ctx: SimContext, id: string | undefined): SimWebhook | undefined {
  return ctx.webhooks.hooks.get(id ?? "");
}

const createWebhook: ApiHandler = async (ctx, req, res) => {
  const body = await readJson(req, CreateBody);
  if (body.error !== undefined) return sendError(res, 400, body.error);
  sendJson(res, 201, render(ctx.webhooks.register(body.value)));
};

const listWebhooks: ApiHandler = (ctx, _req, res) => {
  sendJson(res, 200, [...ctx.webhooks.hooks.values()].map(render));
};

const getWebhook: ApiHandler = (ctx, _req, res, [id]) => {
  const hook = findHook(ctx, id);
  if (!hook) return sendError(res, 404, `webhook '${id}' not found`);
  sendJson(res, 200, render(hook));
};

/** PATCH replaces the fields it names and keeps the others. */
const patchWebhook: ApiHandler = async (ctx, req, res, [id]) => {
  const body = await readJson(req, PatchBody);
  if (body.error !== undefined) return sendError(res, 400, body.error);
  const hook = findHook(ctx, id);
  if (!hook) return sendError(res, 404, `webhook '${id}' not found`);
  for (const [k, v] of Object.entries(body.value)) {
    if (v !== undefined) Object.assign(hook, { [k]: v });
  }
  sendJson(res, 200, render(hook));
};

const deleteWebhook: ApiHandler = (ctx, _req, res, [id]) => {
  if (!ctx.webhooks.hooks.delete(id ?? "")) return sendError(res, 404, `webhook '${id}' not found`);
  sendJson(res, 200, {});
};

/** E2B's webhook registration API. */
export const webhookRoutes: RouteDef<ApiHandler>[] = [
  { method: "POST", template: "/events/webhooks", handler: createWebhook },
  { method: "GET", template: "/events/webhooks", handler: listWebhooks },
  { method: "GET", template: "/events/webhooks/{id}", handler: getWebhook },
  { method: "PATCH", template: "/events/webhooks/{id}", handler: patchWebhook },
  { method: "DELETE", template: "/events/webhooks/{id}", handler: deleteWebhook },
];
