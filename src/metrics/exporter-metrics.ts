// The exporter's metrics: snapshot families rendered once per cycle, plus prom-client self-observability.
import { gzipSync } from "node:zlib";
import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  Registry,
  type RegistryContentType,
} from "prom-client";
import { COLLECTORS, type Snapshot } from "../collect/snapshot.js";
import type { Clock } from "../util/clock.js";
import { inShard } from "../util/shard.js";
import { platformFamilies, type SeenStatuses } from "./platform-families.js";
import { registerProcessMetrics } from "./process-metrics.js";
import {
  aggregateFamilies,
  ChurnTracker,
  metadataLabelNames,
  perSandboxFamilies,
} from "./sandbox-families.js";
import { Family, type Format, labels } from "./text.js";

const PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";
const OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Settings of the metrics layer. */
export interface MetricsOptions {
  namespace: string;
  perSandboxMetrics: boolean;
  metadataLabels: string[];
  maxSandboxSeries: number;
  shard: { index: number; total: number };
  clock: Clock;
  version: string;
  logger?: { warn(obj: object, msg: string): void };
}

/** A rendered scrape body, as chunks written in order (the cached snapshot part is shared, not copied). */
export interface Rendered {
  body: Buffer[];
  contentType: string;
  contentEncoding?: "gzip";
}

/** Picks OpenMetrics when the Accept header asks for it. */
export function negotiateFormat(accept: string | undefined): Format {
  return accept?.includes("application/openmetrics-text") ? "openmetrics" : "prometheus";
}

/**
 * The snapshot part of the body. Gauge families render identically in both formats, so they are
 * one Buffer (the bulk, e.g. per-sandbox series); only the few counter families differ by format.
 */
interface Cached {
  gauges: Buffer;
  gaugesGzip?: Buffer;
  counters: Family[];
}

/** Owns the registry and the cached exposition of the latest snapshot. */
export class ExporterMetrics {
  /** Plain-typed so other modules (probe, policy) can register into it; the format is switched per render. */
  readonly registry = new Registry();
  private cache: Cached = { gauges: Buffer.alloc(0), counters: [] };
  private snapshot: Snapshot | undefined;
  private readonly seen: SeenStatuses = { health: new Set(), node: new Set(), template: new Set() };
  private readonly churn = new ChurnTracker();
  private capWarned = false;
  private readonly requestDuration: Histogram<"endpoint" | "code">;
  private readonly apiErrors: Counter<"endpoint" | "reason">;
  private readonly cycles: Counter;
  private readonly skipped: Counter;
  private renderChain: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: MetricsOptions) {
    const ns = o.namespace;
    const registers = [this.registry];
    registerProcessMetrics(this.registry, o.clock.now() / 1000);
    new Gauge({
      name: `${ns}_exporter_build_info`,
      help: "Build of the exporter, value 1.",
      labelNames: ["version", "node_version"],
      registers,
    })
      .labels(o.version, process.version)
      .set(1);
    this.requestDuration = new Histogram({
      name: `${ns}_exporter_api_request_duration_seconds`,
      help: "Duration of requests to the platform API by endpoint and status code (or error reason).",
      labelNames: ["endpoint", "code"],
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.apiErrors = new Counter({
      name: `${ns}_exporter_api_errors_total`,
      help: "Failed platform API requests by endpoint and reason.",
      labelNames: ["endpoint", "reason"],
      registers,
    });
    this.cycles = new Counter({
      name: `${ns}_exporter_poll_cycles_total`,
      help: "Completed poll cycles.",
      registers,
    });
    this.skipped = new Counter({
      name: `${ns}_exporter_poll_skipped_ticks_total`,
      help: "Schedule ticks skipped because the previous cycle was still running.",
      registers,
    });
    const self = this;
    new Gauge({
      name: `${ns}_exporter_data_age_seconds`,
      help: "Seconds since the collector last succeeded, computed at scrape time.",
      labelNames: ["collector"],
      registers,
      collect() {
        this.reset();
        const snap = self.snapshot;
        if (!snap) return;
        for (const name of COLLECTORS) {
          const c = snap.collectors[name];
          if (!c.skipped && c.lastSuccessAt !== undefined)
            this.labels(name).set((self.o.clock.now() - c.lastSuccessAt) / 1000);
        }
      },
    });
  }

  /** Feeds a completed cycle: renders the snapshot families once, for every scrape until the next. */
  update(snapshot: Snapshot): void {
    const { namespace: ns, shard } = this.o;
    this.snapshot = snapshot;
    this.cycles.inc();
    const families: Family[] = [];
    if (shard.index === 0) families.push(...platformFamilies(snapshot, ns, this.seen));
    const own = snapshot.sandboxes
      ? shard.total > 1
        ? snapshot.sandboxes.filter((s) => inShard(s.id, shard.index, shard.total))
        : snapshot.sandboxes
      : undefined;
    if (own) {
      this.churn.observe(own, snapshot.sandboxesComplete);
      families.push(
        ...aggregateFamilies(ns, own, shard.total > 1 ? String(shard.index) : undefined),
      );
      families.push(...this.churn.families(ns));
      if (this.o.perSandboxMetrics) {
        const per = perSandboxFamilies(ns, own, {
          enabled: true,
          metadataLabels: metadataLabelNames(this.o.metadataLabels),
          maxSeries: this.o.maxSandboxSeries,
        });
        families.push(...per.families);
        families.push(
          new Family(
            `${ns}_exporter_sandbox_series_dropped`,
            "gauge",
            "Sandboxes left out of per-sandbox series by maxSandboxSeries.",
          ).add("", per.dropped),
        );
        if (per.dropped > 0 && !this.capWarned) {
          this.capWarned = true;
          this.o.logger?.warn(
            { dropped: per.dropped, cap: this.o.maxSandboxSeries },
            "per-sandbox series capped",
          );
        }
      }
    }
    families.push(...this.collectorFamilies(snapshot));
    this.cache = {
      gauges: Buffer.from(
        families
          .filter((f) => f.type === "gauge")
          .map((f) => f.render("prometheus"))
          .join(""),
        "utf8",
      ),
      counters: families.filter((f) => f.type === "counter"),
    };
  }

  /** Records one platform API request. */
  observeRequest(info: {
    endpoint: string;
    method: string;
    status?: number;
    durationMs: number;
    error?: string;
  }): void {
    const code = info.status !== undefined ? String(info.status) : (info.error ?? "error");
    this.requestDuration.labels(info.endpoint, code).observe(info.durationMs / 1000);
    if (info.error) this.apiErrors.labels(info.endpoint, info.error).inc();
  }

  /** A tick found the previous cycle still running. */
  skippedTick(): void {
    this.skipped.inc();
  }

  /** The full scrape body: cached snapshot families, then the registry's live metrics. */
  render(format: Format, gzip: boolean): Promise<Rendered> {
    const next = this.renderChain.then(() => this.renderNow(format, gzip));
    this.renderChain = next.catch(() => undefined);
    return next;
  }

  private async renderNow(format: Format, gzip: boolean): Promise<Rendered> {
    (this.registry as Registry<RegistryContentType>).setContentType(
      format === "openmetrics"
        ? Registry.OPENMETRICS_CONTENT_TYPE
        : Registry.PROMETHEUS_CONTENT_TYPE,
    );
    let live: string;
    try {
      live = await this.registry.metrics();
    } finally {
      this.registry.setContentType(Registry.PROMETHEUS_CONTENT_TYPE);
    }
    const small = Buffer.from(
      this.cache.counters.map((f) => f.render(format)).join("") + live,
      "utf8",
    );
    const contentType = format === "openmetrics" ? OPENMETRICS_TYPE : PROMETHEUS_TYPE;
    if (!gzip) return { body: [this.cache.gauges, small], contentType };
    this.cache.gaugesGzip ??= gzipSync(this.cache.gauges, { level: 1 });
    return {
      body: [this.cache.gaugesGzip, gzipSync(small, { level: 1 })],
      contentType,
      contentEncoding: "gzip",
    };
  }

  private collectorFamilies(s: Snapshot): Family[] {
    const ns = this.o.namespace;
    const duration = new Family(
      `${ns}_exporter_collect_duration_seconds`,
      "gauge",
      "Duration of the collector in the last poll cycle.",
    );
    const success = new Family(
      `${ns}_exporter_collect_success`,
      "gauge",
      "1 when the collector succeeded in the last poll cycle.",
    );
    const stale = new Family(
      `${ns}_exporter_collect_stale`,
      "gauge",
      "1 when the collector's series are the last good data of an earlier cycle.",
    );
    const last = new Family(
      `${ns}_exporter_last_success_timestamp_seconds`,
      "gauge",
      "Unix time the collector last succeeded.",
    );
    for (const name of COLLECTORS) {
      const c = s.collectors[name];
      if (c.skipped) continue;
      const l = labels([["collector", name]]);
      duration.add(l, c.durationMs / 1000);
      success.add(l, c.success ? 1 : 0);
      stale.add(l, c.stale ? 1 : 0);
      if (c.lastSuccessAt !== undefined) last.add(l, c.lastSuccessAt / 1000);
    }
    const cycle = new Family(
      `${ns}_exporter_last_cycle_timestamp_seconds`,
      "gauge",
      "Unix time the last poll cycle finished.",
    ).add("", s.finishedAt / 1000);
    return [duration, success, stale, last, cycle];
  }
}
