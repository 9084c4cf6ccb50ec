// The daemon's request budget seen from outside: who waits for a token, and for how long.
import { Counter, Gauge, type Registry } from "prom-client";
import { counter, gauge, metricOptions } from "../exposition/descriptor.js";
import { CALLERS, type Caller } from "../platform/control/limiter.js";

export const API_REQUESTS_WAITING = gauge(
  "exporter_api_requests_waiting",
  "Requests to the platform waiting for the request budget (platform.maxRequestsPerSecond), by caller.",
  ["caller"],
);
export const API_REQUEST_WAIT_SECONDS = counter(
  "exporter_api_request_wait_seconds_total",
  "Time requests to the platform waited for the request budget (and for a Retry-After hold), by caller.",
  ["caller"],
);
export const API_REQUESTS_GRANTED = counter(
  "exporter_api_requests_granted_total",
  "Requests to the platform let through by the request budget, by caller.",
  ["caller"],
);

/** The request budget's families. */
export const LIMITER_FAMILIES = [
  API_REQUESTS_WAITING,
  API_REQUEST_WAIT_SECONDS,
  API_REQUESTS_GRANTED,
] as const;

/** Registers the limiter's families; returns what the limiter reports each grant to. */
export function registerLimiterMetrics(
  registry: Registry,
  ns: string,
  waiting: (caller: Caller) => number,
): { granted(caller: Caller, waitedMs: number): void } {
  const registers = [registry];
  new Gauge({
    ...metricOptions(ns, API_REQUESTS_WAITING),
    registers,
    collect() {
      for (const c of CALLERS) this.labels(c).set(waiting(c));
    },
  });
  const waited = new Counter({
    ...metricOptions(ns, API_REQUEST_WAIT_SECONDS),
    registers,
  });
  const granted = new Counter({
    ...metricOptions(ns, API_REQUESTS_GRANTED),
    registers,
  });
  for (const c of CALLERS) {
    waited.labels(c).inc(0);
    granted.labels(c).inc(0);
  }
  return {
    granted(caller, waitedMs) {
      granted.labels(caller).inc();
      if (waitedMs > 0) waited.labels(caller).inc(waitedMs / 1000);
    },
  };
}
