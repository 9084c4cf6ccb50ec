// The `webhooks:` settings: the webhooks the exporter receives on its listener (E2B's lifecycle
// webhooks) and the bounds on what an unauthenticated sender can make it hold.
import { bool, duration, int, text } from "../config/fields.js";
import type { SectionOf } from "../config/slice.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";

const X = ENV_PREFIX;

export const webhooksSlice = defineSlice({
  key: "webhooks",
  fields: {
    /** File holding the signing secret of E2B's lifecycle webhooks; set, POST /webhooks/e2b is served. */
    e2bSecretFile: text.min(1, { error: "a file path" }).optional(),
    /** POST /webhooks/e2b skips the listener's bearer/basic auth (E2B cannot send either). */
    e2bAuthExempt: bool.default(false),
    /** Largest delivery body read; past it the answer is 413. */
    maxBodyBytes: int(1, 16 * 1024 * 1024).default(262_144),
    /** Longest a delivery's body may take to arrive; past it the answer is 408. */
    bodyTimeoutMs: duration().default(10_000),
    /** Deliveries read at once; one more is answered 503 (Retry-After) at once. */
    maxInFlight: int(1, 10_000).default(64),
    /** Body bytes all deliveries in flight hold together; past it 503 at once. */
    maxInFlightBytes: int(1, 1024 * 1024 * 1024).default(4 * 1024 * 1024),
  },
  /** A delivery of the largest size must fit in flight. */
  check(w, ctx) {
    if (w.maxInFlightBytes >= w.maxBodyBytes) return;
    ctx.addIssue({
      code: "custom",
      path: ["maxInFlightBytes"],
      message: `at least webhooks.maxBodyBytes (${w.maxBodyBytes})`,
      input: w.maxInFlightBytes,
    });
  },
  settings: [
    {
      path: "webhooks.e2bSecretFile",
      env: `${X}E2B_WEBHOOK_SECRET_FILE`,
      flag: "e2b-webhook-secret-file",
      kind: "string",
      help: "file holding the signing secret of E2B's lifecycle webhooks; set, POST /webhooks/e2b receives them",
      doc: "file holding the signing secret of E2B's lifecycle webhooks; set, `POST /webhooks/e2b` receives them (see [Receiving E2B lifecycle webhooks](operations.md#receiving-e2b-lifecycle-webhooks))",
    },
    {
      path: "webhooks.e2bAuthExempt",
      env: `${X}E2B_WEBHOOK_AUTH_EXEMPT`,
      flag: "e2b-webhook-auth-exempt",
      kind: "bool",
      help: "let POST /webhooks/e2b in without the listener's bearer/basic auth (E2B cannot send it; the signature still applies)",
      doc: "let `POST /webhooks/e2b` in without the listener's bearer/basic auth (E2B cannot send it; the signature still applies)",
    },
    {
      path: "webhooks.maxBodyBytes",
      env: `${X}WEBHOOK_MAX_BODY_BYTES`,
      flag: "webhook-max-body-bytes",
      kind: "int",
      help: "largest webhook delivery read (413 past it)",
    },
    {
      path: "webhooks.bodyTimeoutMs",
      env: `${X}WEBHOOK_BODY_TIMEOUT`,
      flag: "webhook-body-timeout",
      kind: "duration",
      help: "longest a webhook delivery's body may take to arrive (408 past it)",
    },
    {
      path: "webhooks.maxInFlight",
      env: `${X}WEBHOOK_MAX_IN_FLIGHT`,
      flag: "webhook-max-in-flight",
      kind: "int",
      help: "webhook deliveries read at once (503 with Retry-After past it)",
      doc: "webhook deliveries read at once (1–10,000; 503 with `Retry-After` past it)",
    },
    {
      path: "webhooks.maxInFlightBytes",
      env: `${X}WEBHOOK_MAX_IN_FLIGHT_BYTES`,
      flag: "webhook-max-in-flight-bytes",
      kind: "int",
      help: "body bytes all webhook deliveries in flight hold together (503 with Retry-After past it)",
      doc: "body bytes all webhook deliveries in flight hold together (503 with `Retry-After` past it); at least `webhooks.maxBodyBytes`",
    },
  ],
});

declare module "../config/settings.js" {
  interface Settings {
    webhooks: SectionOf<typeof webhooksSlice>;
  }
}
