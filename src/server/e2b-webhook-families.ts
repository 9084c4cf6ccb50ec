// The families of POST /webhooks/e2b: deliveries by result, events dropped by reason, and what the
// deliveries being read hold.
import { Counter, Gauge, type Registry } from "prom-client";
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
  const deliveries = new Counter({
    name: `${o.namespace}_webhook_deliveries_total`,
    help: `E2B lifecycle webhook deliveries to POST ${o.path}, by result (${DELIVERY_RESULTS.join(", ")}).`,
    labelNames: ["result"] as const,
    registers: [o.registry],
  });
  for (const r of DELIVERY_RESULTS) deliveries.labels(r).inc(0);
  const dropped = new Counter({
    name: `${o.namespace}_webhook_events_dropped_total`,
    help: `Events of a list delivered to POST ${o.path} left out while the rest of the list was taken, by reason (invalid: not a lifecycle event; stale: older than the event ids remembered, a replay).`,
    labelNames: ["reason"] as const,
    registers: [o.registry],
  });
  for (const r of DROP_REASONS) dropped.labels(r).inc(0);
  new Gauge({
    name: `${o.namespace}_webhook_inflight_bytes`,
    help: `Body bytes held by the deliveries to POST ${o.path} being read, counted as they arrive; at most webhooks.maxInFlightBytes.`,
    registers: [o.registry],
    collect() {
      this.set(budget.bytes);
    },
  });
  new Gauge({
    name: `${o.namespace}_webhook_inflight_deliveries`,
    help: `Deliveries to POST ${o.path} being read now; at most webhooks.maxInFlight.`,
    registers: [o.registry],
    collect() {
      this.set(budget.count);
    },
  });
  return { deliveries, dropped };
}
