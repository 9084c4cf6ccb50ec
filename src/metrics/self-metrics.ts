// Scrape-time state of the exporter in a prom-client registry: build info, platform request
// histogram and errors, poll counters, data age (computed when scraped), process_* series.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import {
  type CollectorStatus,
  collectorStatuses,
  type Snapshot,
  staleAt,
} from "../collect/snapshot.js";
import {
  counter,
  type FamilyDescriptor,
  gauge,
  histogram,
  metricOptions,
} from "../exposition/descriptor.js";
import type { Clock } from "../util/clock.js";
import { registerProcessMetrics } from "./process-metrics.js";

/** Reasons of a failed request (errorReason), each a series at 0 once its endpoint was asked. */
const REQUEST_ERROR_REASONS = [
  "http_5xx",
  "http_4xx",
  "rate_limited",
  "timeout",
  "network",
  "bad_body",
  "not_found",
] as const;

/** Request duration buckets, seconds: local simulators answer in ms, remote APIs in 100s of ms. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const BUILD_INFO = gauge(
  "exporter_build_info",
  "Version of the exporter and of Node.js, value 1.",
  ["version", "node_version"],
);
export const API_REQUEST_DURATION = histogram(
  "exporter_api_request_duration_seconds",
  "Duration of requests to the platform API by route, method and HTTP status (or error reason).",
  ["endpoint", "method", "code"],
);
export const API_ERRORS = counter(
  "exporter_api_errors_total",
  "Failed requests to the platform API by route, method and reason.",
  ["endpoint", "method", "reason"],
);
export const POLL_CYCLES = counter(
  "exporter_poll_cycles_total",
  "Completed poll cycles (walks of the sandbox list, successful or not).",
);
export const POLL_SKIPPED_TICKS = counter(
  "exporter_poll_skipped_ticks_total",
  "Schedule ticks that found the previous sandbox walk still running (the other collectors were refreshed regardless).",
);
export const WALK_DROPS = counter(
  "exporter_sandbox_walk_drops_total",
  "Walks whose sandbox count fell by more than poll.confirmDropRatio, by whether a second walk confirmed the drop (confirmed) or not (unconfirmed: the first walk was discarded).",
  ["result"],
);
export const WALKS_ABANDONED = counter(
  "exporter_sandbox_walks_abandoned_total",
  "Sandbox walks abandoned as incomplete because they ran past poll.maxWalkMs (an endless or crawling page chain).",
);
export const DATA_AGE = gauge(
  "exporter_data_age_seconds",
  "Seconds since the collector last succeeded, computed at scrape time; absent before its first success.",
  ["collector"],
);
export const COLLECT_STALE = gauge(
  "exporter_collect_stale",
  "1 when the collector's series are the last good data of an earlier cycle (its latest attempt failed, or its last success is older than two poll intervals), else 0; computed at scrape time.",
  ["collector"],
);
export const RELOAD_SUCCESSFUL = gauge(
  "exporter_config_last_reload_successful",
  "1 when the last configuration reload (SIGHUP, POST /-/reload) succeeded, else 0.",
);
export const RELOAD_TIMESTAMP = gauge(
  "exporter_config_last_reload_success_timestamp_seconds",
  "When the configuration was last loaded successfully (start or reload), epoch seconds.",
);
export const INVALID_VALUES_DROPPED = counter(
  "exporter_invalid_values_dropped_total",
  "Values of platform records left out because they did not parse or were out of range, by resource and field; field id or record counts whole records left out (no id, not an object).",
  ["resource", "field"],
);

/** The registry part's own families (the process_* ones are process-metrics.ts'). */
export const SELF_FAMILIES = [
  BUILD_INFO,
  API_REQUEST_DURATION,
  API_ERRORS,
  POLL_CYCLES,
  POLL_SKIPPED_TICKS,
  WALK_DROPS,
  WALKS_ABANDONED,
  DATA_AGE,
  COLLECT_STALE,
  RELOAD_SUCCESSFUL,
  RELOAD_TIMESTAMP,
  INVALID_VALUES_DROPPED,
] as const;

/** One finished request to the platform. */
export interface RequestObservation {
  endpoint: string;
  method: string;
  status?: number;
  durationMs: number;
  error?: string;
}

/** Settings of the registry part. */
export interface SelfMetricsOptions {
  ns: string;
  clock: Clock;
  version: string;
  processMetrics: boolean;
  /**
   * A team's part of several (default false): the families of the process (build info, reloads,
   * process_*) are the exporter's, written once, not per team.
   */
  teamPart?: boolean;
  /** The latest snapshot, read when scraped for data age. */
  latest(): Snapshot | undefined;
}

/** One (resource, field) count of values the normalizer left out (InvalidValues.entries()). */
export interface InvalidValueCount {
  readonly resource: string;
  readonly field: string;
  readonly count: number;
}

/**
 * Registers `<ns>_exporter_invalid_values_dropped_total{resource,field}`: values (and records,
 * field `id` or `record`) the poller's normalizer left out, read from its tally when scraped.
 */
export function registerInvalidValueMetrics(
  registry: Registry,
  ns: string,
  read: () => readonly InvalidValueCount[],
): void {
  new Counter({
    ...metricOptions(ns, INVALID_VALUES_DROPPED),
    registers: [registry],
    collect() {
      this.reset();
      for (const c of read()) this.labels(c.resource, c.field).inc(c.count);
    },
  });
}

/**
 * A gauge per collector, computed when scraped from the latest snapshot at the clock's now:
 * nothing a tick publishes can freeze it. `value` undefined leaves the collector out.
 */
function atScrape(
  registers: Registry[],
  o: Pick<SelfMetricsOptions, "latest" | "clock" | "ns">,
  d: FamilyDescriptor<"gauge">,
  value: (c: CollectorStatus, now: number) => number | undefined,
): void {
  new Gauge({
    ...metricOptions(o.ns, d),
    registers,
    collect() {
      this.reset();
      const snap = o.latest();
      if (!snap) return;
      const now = o.clock.now();
      for (const c of collectorStatuses(snap)) {
        const v = value(c, now);
        if (v !== undefined) this.labels(c.name).set(v);
      }
    },
  });
}

/** Owns the prom-client registry (no global one) and the metrics updated between snapshots. */
export class SelfMetrics {
  readonly registry = new Registry();
  private readonly clock: Clock;
  private readonly requestDuration: Histogram<"endpoint" | "method" | "code">;
  private readonly apiErrors: Counter<"endpoint" | "method" | "reason">;
  /** `method endpoint` pairs whose error series exist (at 0 until one fails). */
  private readonly errorSeries = new Set<string>();
  private readonly cycles: Counter;
  private readonly skipped: Counter;
  private readonly drops: Counter<"result">;
  private readonly abandoned: Counter;
  private readonly reloadOk: Gauge | undefined;
  private readonly reloadAt: Gauge | undefined;

  constructor(o: SelfMetricsOptions) {
    const { ns } = o;
    const registers = [this.registry];
    const once = o.teamPart === true ? [] : registers;
    new Gauge({
      ...metricOptions(ns, BUILD_INFO),
      registers: once,
    })
      .labels(o.version, process.version)
      .set(1);
    this.requestDuration = new Histogram({
      ...metricOptions<"endpoint" | "method" | "code">(ns, API_REQUEST_DURATION),
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.apiErrors = new Counter({
      ...metricOptions<"endpoint" | "method" | "reason">(ns, API_ERRORS),
      registers,
    });
    this.cycles = new Counter({ ...metricOptions(ns, POLL_CYCLES), registers });
    this.skipped = new Counter({ ...metricOptions(ns, POLL_SKIPPED_TICKS), registers });
    this.drops = new Counter({ ...metricOptions<"result">(ns, WALK_DROPS), registers });
    for (const result of ["confirmed", "unconfirmed"]) this.drops.labels(result).inc(0);
    this.abandoned = new Counter({ ...metricOptions(ns, WALKS_ABANDONED), registers });
    atScrape(registers, o, DATA_AGE, (c, now) =>
      c.skipped || c.lastSuccessAt === undefined
        ? undefined
        : Math.max(0, now - c.lastSuccessAt) / 1000,
    );
    atScrape(registers, o, COLLECT_STALE, (c, now) =>
      c.skipped || c.unsupported ? undefined : staleAt(c, now) ? 1 : 0,
    );
    this.reloadOk =
      o.teamPart === true
        ? undefined
        : new Gauge({ ...metricOptions(ns, RELOAD_SUCCESSFUL), registers });
    this.reloadAt =
      o.teamPart === true
        ? undefined
        : new Gauge({ ...metricOptions(ns, RELOAD_TIMESTAMP), registers });
    this.clock = o.clock;
    // Built from a configuration that loaded: the start counts as a successful load.
    this.reloaded(true);
    if (o.processMetrics && o.teamPart !== true) registerProcessMetrics(this.registry);
  }

  /** Records one request attempt; `code` is the HTTP status, or the error reason without one. */
  observeRequest(info: RequestObservation): void {
    const code = info.status !== undefined ? String(info.status) : (info.error ?? "error");
    this.requestDuration.labels(info.endpoint, info.method, code).observe(info.durationMs / 1000);
    this.initErrors(info.endpoint, info.method);
    if (info.error) this.apiErrors.labels(info.endpoint, info.method, info.error).inc();
  }

  /**
   * An endpoint's error series start at 0 with its first request: an error ratio, and a panel
   * by reason, then read 0 on a healthy system instead of no data.
   */
  private initErrors(endpoint: string, method: string): void {
    const key = `${method} ${endpoint}`;
    if (this.errorSeries.has(key)) return;
    this.errorSeries.add(key);
    for (const reason of REQUEST_ERROR_REASONS)
      this.apiErrors.labels(endpoint, method, reason).inc(0);
  }

  /** Counts a 2xx answer whose body had the wrong shape (its request was observed already). */
  badBody(endpoint: string, method: string): void {
    this.apiErrors.labels(endpoint, method, "bad_body").inc();
  }

  /** Counts a completed poll cycle. */
  cycle(): void {
    this.cycles.inc();
  }

  /** Records a configuration reload (the start counts as one that succeeded). */
  reloaded(ok: boolean): void {
    this.reloadOk?.set(ok ? 1 : 0);
    if (ok) this.reloadAt?.set(this.clock.now() / 1000);
  }

  /** Counts a walk that fell by more than the confirm ratio. */
  walkDrop(confirmed: boolean): void {
    this.drops.labels(confirmed ? "confirmed" : "unconfirmed").inc();
  }

  /** Counts a walk abandoned at poll.maxWalkMs. */
  walkAbandoned(): void {
    this.abandoned.inc();
  }

  /** Counts a tick that found the previous walk still running. */
  skippedTick(): void {
    this.skipped.inc();
  }
}
