// The families of POST /webhooks/e2b: deliveries by result, events dropped by reason, and what the
// deliveries being read hold.
import { Counter, Gauge, type Registry } from "prom-client";
import { counter, gauge, metricOptions, setting } from "../exposition/descriptor.js";
import type { InflightBudget } from "../util/inflight-budget.js";

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

/** The route's path in the HELP texts; the reference shows E2B's. */
const PATH = { path: "/webhooks/e2b" };

/** The route is on with a signing secret (webhooks.e2bSecretFile). */
const ON = { on: setting("webhooks.e2bSecretFile"), vars: PATH };

export const WEBHOOK_DELIVERIES = counter(
  "webhook_deliveries_total",
  `E2B lifecycle webhook deliveries to POST {path}, by result (${DELIVERY_RESULTS.join(", ")}).`,
  ["result"],
  ON,
);
export const WEBHOOK_EVENTS_DROPPED = counter(
  "webhook_events_dropped_total",
  "Events of a list delivered to POST {path} left out while the rest of the list was taken, by reason (invalid: not a lifecycle event; stale: older than the event ids remembered, a replay).",
  ["reason"],
  ON,
);
export const WEBHOOK_INFLIGHT_BYTES = gauge(
  "webhook_inflight_bytes",
  "Body bytes held by the deliveries to POST {path} being read, counted as they arrive; at most webhooks.maxInFlightBytes.",
  [],
  ON,
);
export const WEBHOOK_INFLIGHT_DELIVERIES = gauge(
  "webhook_inflight_deliveries",
  "Deliveries to POST {path} being read now; at most webhooks.maxInFlight.",
  [],
  ON,
);

/** The route's families, on with a signing secret (webhooks.e2bSecretFile). */
export const WEBHOOK_FAMILIES = [
  WEBHOOK_DELIVERIES,
  WEBHOOK_EVENTS_DROPPED,
  WEBHOOK_INFLIGHT_BYTES,
  WEBHOOK_INFLIGHT_DELIVERIES,
] as const;

/** The route's families: deliveries by result, dropped events by reason, the bytes in flight. */
export interface WebhookFamilies {
  deliveries: Counter<"result">;
  dropped: Counter<"reason">;
}

/** Registers the route's families, every label value at 0 from the start. */
export function webhookFamilies(
  o: { registry: Registry; namespace: string; path: string },
  budget: InflightBudget,
): WebhookFamilies {
  const path = { path: o.path };
  const deliveries = new Counter<"result">({
    ...metricOptions(o.namespace, WEBHOOK_DELIVERIES, path),
    registers: [o.registry],
  });
  for (const r of DELIVERY_RESULTS) deliveries.labels(r).inc(0);
  const dropped = new Counter<"reason">({
    ...metricOptions(o.namespace, WEBHOOK_EVENTS_DROPPED, path),
    registers: [o.registry],
  });
  for (const r of DROP_REASONS) dropped.labels(r).inc(0);
  new Gauge({
    ...metricOptions(o.namespace, WEBHOOK_INFLIGHT_BYTES, path),
    registers: [o.registry],
    collect() {
      this.set(budget.bytes);
    },
  });
  new Gauge({
    ...metricOptions(o.namespace, WEBHOOK_INFLIGHT_DELIVERIES, path),
    registers: [o.registry],
    collect() {
      this.set(budget.count);
    },
  });
  return { deliveries, dropped };
}
