// Scrape-time state of the exporter in a prom-client registry: build info, platform request
// histogram and errors, poll counters, data age (computed when scraped), process_* series.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import {
  type CollectorStatus,
  collectorStatuses,
  type Snapshot,
  staleAt,
} from "../collect/snapshot.js";
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
    name: `${ns}_exporter_invalid_values_dropped_total`,
    help: "Values of platform records left out because they did not parse or were out of range, by resource and field; field id or record counts whole records left out (no id, not an object).",
    labelNames: ["resource", "field"],
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
  o: Pick<SelfMetricsOptions, "latest" | "clock">,
  name: string,
  help: string,
  value: (c: CollectorStatus, now: number) => number | undefined,
): void {
  new Gauge({
    name,
    help,
    labelNames: ["collector"],
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
      name: `${ns}_exporter_build_info`,
      help: "Version of the exporter and of Node.js, value 1.",
      labelNames: ["version", "node_version"],
      registers: once,
    })
      .labels(o.version, process.version)
      .set(1);
    this.requestDuration = new Histogram({
      name: `${ns}_exporter_api_request_duration_seconds`,
      help: "Duration of requests to the platform API by route, method and HTTP status (or error reason).",
      labelNames: ["endpoint", "method", "code"],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.apiErrors = new Counter({
      name: `${ns}_exporter_api_errors_total`,
      help: "Failed requests to the platform API by route, method and reason.",
      labelNames: ["endpoint", "method", "reason"],
      registers,
    });
    this.cycles = new Counter({
      name: `${ns}_exporter_poll_cycles_total`,
      help: "Completed poll cycles (walks of the sandbox list, successful or not).",
      registers,
    });
    this.skipped = new Counter({
      name: `${ns}_exporter_poll_skipped_ticks_total`,
      help: "Schedule ticks that found the previous sandbox walk still running (the other collectors were refreshed regardless).",
      registers,
    });
    this.drops = new Counter({
      name: `${ns}_exporter_sandbox_walk_drops_total`,
      help: "Walks whose sandbox count fell by more than poll.confirmDropRatio, by whether a second walk confirmed the drop (confirmed) or not (unconfirmed: the first walk was discarded).",
      labelNames: ["result"],
      registers,
    });
    for (const result of ["confirmed", "unconfirmed"]) this.drops.labels(result).inc(0);
    this.abandoned = new Counter({
      name: `${ns}_exporter_sandbox_walks_abandoned_total`,
      help: "Sandbox walks abandoned as incomplete because they ran past poll.maxWalkMs (an endless or crawling page chain).",
      registers,
    });
    atScrape(
      registers,
      o,
      `${ns}_exporter_data_age_seconds`,
      "Seconds since the collector last succeeded, computed at scrape time; absent before its first success.",
      (c, now) =>
        c.skipped || c.lastSuccessAt === undefined
          ? undefined
          : Math.max(0, now - c.lastSuccessAt) / 1000,
    );
    atScrape(
      registers,
      o,
      `${ns}_exporter_collect_stale`,
      "1 when the collector's series are the last good data of an earlier cycle (its latest attempt failed, or its last success is older than two poll intervals), else 0; computed at scrape time.",
      (c, now) => (c.skipped || c.unsupported ? undefined : staleAt(c, now) ? 1 : 0),
    );
    this.reloadOk =
      o.teamPart === true
        ? undefined
        : new Gauge({
            name: `${ns}_exporter_config_last_reload_successful`,
            help: "1 when the last configuration reload (SIGHUP, POST /-/reload) succeeded, else 0.",
            registers,
          });
    this.reloadAt =
      o.teamPart === true
        ? undefined
        : new Gauge({
            name: `${ns}_exporter_config_last_reload_success_timestamp_seconds`,
            help: "When the configuration was last loaded successfully (start or reload), epoch seconds.",
            registers,
          });
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
