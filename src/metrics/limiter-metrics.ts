// The daemon's request budget seen from outside: who waits for a token, and for how long.
import { Counter, Gauge, type Registry } from "prom-client";
import { CALLERS, type Caller } from "../platform/control/limiter.js";

/** Registers the limiter's families; returns what the limiter reports each grant to. */
export function registerLimiterMetrics(
  registry: Registry,
  ns: string,
  waiting: (caller: Caller) => number,
): { granted(caller: Caller, waitedMs: number): void } {
  const registers = [registry];
  new Gauge({
    name: `${ns}_exporter_api_requests_waiting`,
    help: "Requests to the platform waiting for the request budget (platform.maxRequestsPerSecond), by caller.",
    labelNames: ["caller"],
    registers,
    collect() {
      for (const c of CALLERS) this.labels(c).set(waiting(c));
    },
  });
  const waited = new Counter({
    name: `${ns}_exporter_api_request_wait_seconds_total`,
    help: "Time requests to the platform waited for the request budget (and for a Retry-After hold), by caller.",
    labelNames: ["caller"],
    registers,
  });
  const granted = new Counter({
    name: `${ns}_exporter_api_requests_granted_total`,
    help: "Requests to the platform let through by the request budget, by caller.",
    labelNames: ["caller"],
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
