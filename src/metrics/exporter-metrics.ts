// The metrics layer: snapshot families rendered once per snapshot into cached Buffers (gauges are
// byte-identical in both formats; the few counters are rendered per format on first request),
// followed at scrape time by the prom-client registry's live metrics.
import { setImmediate } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import type { Registry } from "prom-client";
import type { TickCollector } from "../collect/collector.js";
import type { Snapshot } from "../collect/snapshot.js";
import { extraLabelNames } from "../exposition/naming.js";
import { registryAsOpenMetrics } from "../exposition/openmetrics.js";
import {
  ExpositionDrops,
  registerDropFamilies,
  registryAsText,
} from "../exposition/registry-families.js";
import type { Family, Format } from "../exposition/text.js";
import { ValueGuard } from "../exposition/value-guard.js";
import type { PlatformFacts } from "../platform/facts.js";
import type { Sandbox } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { ChurnTracker } from "./churn.js";
import { collectorStatusFamilies } from "./collector-status-families.js";
import { droppedFamily, guardFamilies } from "./guard-families.js";
import { EventLedger } from "./lifecycle-events.js";
import { PerSandboxSeries } from "./per-sandbox.js";
import { runSteps, runStepsYielding, type Steps } from "./render-steps.js";
import { SandboxAggregates } from "./sandbox-aggregates.js";
import { GZIP_LEVEL, gzipChunks, OPENMETRICS_TYPE, PROMETHEUS_TYPE } from "./scrape-format.js";
import { type RequestObservation, SelfMetrics } from "./self-metrics.js";
import { TickCollectorFamilies } from "./tick-collector-families.js";

export type { Format } from "../exposition/text.js";
export { negotiateFormat, OPENMETRICS_TYPE, PROMETHEUS_TYPE } from "./scrape-format.js";

/**
 * Sandboxes rendered between two turns of the event loop in updateAsync: on the 2-core bench
 * machine a slice takes a few ms to render afresh, about 1 ms to copy unchanged.
 */
const RENDER_SLICE = 1_000;
/** Labels of the per-sandbox info series that metadata labels must not take. */
const FIXED_SANDBOX_LABELS = ["sandbox_id", "template", "state", "shard"];

/** Settings of the metrics layer. */
export interface MetricsOptions {
  /** Metric name prefix, e.g. "sandbox". */
  namespace: string;
  /** The tick collectors whose own families are rendered: the catalog's (src/catalog.ts). */
  collectors: readonly TickCollector[];
  perSandboxMetrics: boolean;
  /** Metadata keys allowed as labels of sandbox_info (snake_cased; `metadata_` on a clash). */
  metadataLabels: string[];
  maxSandboxSeries: number;
  /** Longest label value written whole; longer ones are cut (see ValueGuard) and counted. */
  maxLabelValueLength: number;
  /** Scrubs secrets out of every label value from the platform (an echoing upstream). */
  scrub?: (text: string) => string;
  shard: { index: number; total: number };
  /** States that count as running / paused (config `states`). */
  runningStates: string[];
  pausedStates: string[];
  clock: Clock;
  /** Exporter version for build_info. */
  version: string;
  /**
   * Lifecycle events on (poll.events): the ledger is built into the registry, and churn takes
   * kill reasons from it; `horizonMs` is how long an event id is remembered.
   */
  lifecycleEvents?: { horizonMs: number; maxTemplates: number; facts?: PlatformFacts };
  /** pino-compatible; warns once about the series cap and about fields left out. */
  logger?: { warn(obj: object, msg: string): void };
  /** Register prom-client's process_* metrics (default true; tests turn them off for exact bodies). */
  processMetrics?: boolean;
  /** A team's part of several (src/teams/): the process's own families are left to the exporter's. */
  teamPart?: boolean;
  /** Sandboxes updateAsync renders between two turns of the event loop (default RENDER_SLICE). */
  renderSlice?: number;
  /** How updateAsync gives the event loop a turn (default setImmediate; tests hold it to look in). */
  yieldToLoop?: () => Promise<unknown>;
}

/** A rendered scrape body, as chunks written in order (the cached snapshot part is shared, not copied). */
export interface Rendered {
  body: Buffer[];
  contentType: string;
  contentEncoding?: "gzip";
}

/** Everything rendered from one snapshot. */
interface Cached {
  /** Gauge families: identical in both formats. */
  gauges: Buffer[];
  counters: Family[];
  countersText: Partial<Record<Format, Buffer>>;
  gaugesGzip?: Promise<Buffer[]>;
}

/** Owns the registry and the cached exposition of the latest snapshot. */
export class ExporterMetrics {
  /** prom-client registry (Prometheus content type) that other modules may register into. */
  readonly registry: Registry;
  /** What the exposition left out (NaN or +-Inf where a family never means one, failed families). */
  readonly drops: ExpositionDrops;
  private readonly self: SelfMetrics;
  private readonly platform: TickCollectorFamilies;
  private readonly aggregates: SandboxAggregates;
  private readonly churn: ChurnTracker;
  /** The lifecycle event ledger (both the events collector and the webhook feed it), when on. */
  readonly events: EventLedger | undefined;
  private readonly perSandbox: PerSandboxSeries | undefined;
  private cache: Cached = { gauges: [], counters: [], countersText: {} };
  /** The last updateAsync call's run; the next one starts after it. */
  private queue: Promise<void> = Promise.resolve();
  private updating = false;
  private readonly turn: () => Promise<unknown>;
  private snapshot: Snapshot | undefined;
  private readonly warned = new Set<string>();
  /** Once a scraper asked for gzip, later snapshots are compressed as soon as they arrive. */
  private gzipWanted = false;

  constructor(private readonly o: MetricsOptions) {
    const ns = o.namespace;
    this.turn = o.yieldToLoop ?? (() => setImmediate());
    this.self = new SelfMetrics({
      ns,
      clock: o.clock,
      version: o.version,
      processMetrics: o.processMetrics ?? true,
      ...(o.teamPart ? { teamPart: true } : {}),
      latest: () => this.snapshot,
    });
    this.registry = this.self.registry;
    this.drops = new ExpositionDrops((family, err) =>
      this.warnOnce(`family:${family}`, { family, err }, "metric family left out of the scrape"),
    );
    registerDropFamilies(this.registry, ns, this.drops);
    // Each tick collector's families, made with the registry for any it updates between snapshots.
    this.platform = new TickCollectorFamilies(ns, o.collectors, this.registry);
    // The ledger's labels come from events, not snapshots: a guard of its own.
    const eventLabels = new ValueGuard(o.maxLabelValueLength, o.scrub);
    this.events = o.lifecycleEvents
      ? new EventLedger({
          ns,
          registry: this.registry,
          clock: o.clock,
          horizonMs: o.lifecycleEvents.horizonMs,
          maxTemplates: o.lifecycleEvents.maxTemplates,
          label: (v) => eventLabels.label(v),
          ...(o.lifecycleEvents.facts ? { facts: o.lifecycleEvents.facts } : {}),
        })
      : undefined;
    this.churn = new ChurnTracker({
      pausedStates: o.pausedStates,
      ...(this.events ? { kills: this.events } : {}),
    });
    this.aggregates = new SandboxAggregates({
      ns,
      runningStates: o.runningStates,
      pausedStates: o.pausedStates,
      ...(o.shard.total > 1 ? { shardLabel: String(o.shard.index) } : {}),
    });
    if (o.perSandboxMetrics) {
      const { pairs, skipped } = extraLabelNames(
        o.metadataLabels,
        FIXED_SANDBOX_LABELS,
        "metadata_",
      );
      for (const key of skipped)
        this.warnOnce(`meta:${key}`, { key }, "metadata label left out: its label name is taken");
      this.perSandbox = new PerSandboxSeries({
        ns,
        metadataLabels: pairs,
        maxSeries: o.maxSandboxSeries,
      });
    }
  }

  /**
   * Feeds a snapshot: renders its families once, for every scrape until the next. Synchronous: the
   * event loop waits for the whole render (hundreds of ms at 100,000 sandboxes with per-sandbox
   * series), and gzip scrapes then wait for the compression; updateAsync does neither.
   */
  update(snapshot: Snapshot): void {
    if (this.updating) throw new Error("update() called while updateAsync() runs");
    this.swap(snapshot, runSteps(this.renderSteps(snapshot)));
    if (this.gzipWanted) this.gaugesGzip(this.cache).catch(() => undefined);
  }

  /**
   * The same render, giving the event loop a turn after every RENDER_SLICE sandboxes of each part:
   * scrapes meanwhile get the previous body. Once a scraper has asked for gzip the new body is
   * compressed (off the event loop) before it is served, and then plain and gzip bodies change
   * together. Calls run one after the other, in call order.
   */
  updateAsync(snapshot: Snapshot): Promise<void> {
    const run = this.queue.then(async () => {
      this.updating = true;
      try {
        const next = await runStepsYielding(this.renderSteps(snapshot), this.turn);
        if (this.gzipWanted) await this.gaugesGzip(next).catch(() => undefined);
        this.swap(snapshot, next);
      } finally {
        this.updating = false;
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the latest snapshot's exposition is cached, its gzip too when scrapers ask for it. */
  async settled(): Promise<void> {
    await this.queue;
    if (this.gzipWanted) await this.gaugesGzip(this.cache).catch(() => undefined);
  }

  /** Makes a rendered snapshot the one scrapes read. */
  private swap(snapshot: Snapshot, next: Cached): void {
    this.snapshot = snapshot;
    if (snapshot.walked) this.self.cycle();
    this.cache = next;
  }

  /** Renders every snapshot family, yielding between parts and slices of sandboxes. */
  private *renderSteps(snapshot: Snapshot): Steps<Cached> {
    const { namespace: ns, shard } = this.o;
    const slice = this.o.renderSlice ?? RENDER_SLICE;
    const guard = new ValueGuard(this.o.maxLabelValueLength, this.o.scrub);
    const small: Family[] = [];
    /** The collectors' counters: rendered per format, after the gauges. */
    const collected: Family[] = [];
    let big: Buffer[] = [];
    if (shard.index === 0) {
      const { families, skipped } = this.platform.render(snapshot, guard);
      for (const f of families) (f.type === "counter" ? collected : small).push(f);
      for (const f of skipped)
        this.warnOnce(
          `field:${f}`,
          { field: f },
          "numeric field left out: its metric name is taken",
        );
    }
    // An unsupported usage collector has no samples to show: its families are left out.
    const usage = snapshot.collectors.usage?.unsupported ? undefined : snapshot.usage?.samples;
    // The walk kept only this shard's sandboxes (the shard is applied at the list).
    const own = snapshot.sandboxes;
    if (own) {
      yield;
      // Churn compares walks: a snapshot that repeats the last walk's list is not a new one.
      if (snapshot.walked)
        yield* this.churn.steps(own, snapshot.sandboxesComplete, walkEndedAt(snapshot), slice);
      yield;
      const templates = snapshot.templates?.map((t) => t.id) ?? [];
      small.push(
        ...(yield* this.aggregates.steps(own, templates, snapshot.finishedAt, guard, slice, usage)),
      );
      if (this.perSandbox) {
        yield;
        const records = Array.isArray(own) ? (own as readonly Sandbox[]) : Array.from(own);
        const out = yield* this.perSandbox.steps(records, guard, slice, usage);
        big = out.chunks;
        if (out.dropped > 0)
          this.warnOnce(
            "cap",
            { dropped: out.dropped, maxSandboxSeries: this.o.maxSandboxSeries },
            "per-sandbox series capped; raise maxSandboxSeries or shard the exporter",
          );
        small.push(droppedFamily(ns, out.dropped));
      }
    }
    small.push(...collectorStatusFamilies(ns, snapshot, shard.total > 1));
    const counters = [...this.churn.families(ns, guard), ...collected];
    for (const f of counters) this.drops.dropNonFinite(`${f.name}_total`, f.nonFinite);
    small.push(...guardFamilies(ns, guard, usage !== undefined));
    const text = small.map((f) => f.render("prometheus")).join("");
    return { gauges: [Buffer.from(text, "utf8"), ...big], counters, countersText: {} };
  }

  /** Records one platform API request (called by the control client). */
  observeRequest(info: RequestObservation): void {
    this.self.observeRequest(info);
  }

  /** Records a configuration reload: sandbox_exporter_config_last_reload_successful. */
  reloaded(ok: boolean): void {
    this.self.reloaded(ok);
  }

  /** Counts a 2xx answer whose body had the wrong shape (called by the control client). */
  badBody(endpoint: string, method: string): void {
    this.self.badBody(endpoint, method);
  }

  /** A walk fell by more than the confirm ratio; the second walk confirmed it or not. */
  walkDrop(confirmed: boolean): void {
    this.self.walkDrop(confirmed);
  }

  /** A walk ran past poll.maxWalkMs and was abandoned as incomplete. */
  walkAbandoned(): void {
    this.self.walkAbandoned();
  }

  /** A tick found the previous walk still running. */
  skippedTick(): void {
    this.self.skippedTick();
  }

  /**
   * The body's parts: the cached snapshot families (`gauges`, and `counters` in this format: the
   * same Buffers until the next snapshot) and the registry's live metrics (`live`, made now;
   * OpenMetrics' `# EOF` left to the caller). Several teams merge these parts (src/teams/).
   */
  async parts(
    format: Format,
  ): Promise<{ gauges: readonly Buffer[]; counters: Buffer; live: string }> {
    const cache = this.cache;
    const live =
      format === "openmetrics"
        ? await registryAsOpenMetrics(this.registry, this.drops)
        : await registryAsText(this.registry, this.drops);
    cache.countersText[format] ??= Buffer.from(
      cache.counters.map((f) => f.render(format)).join(""),
      "utf8",
    );
    return { gauges: cache.gauges, counters: cache.countersText[format], live };
  }

  /** The full scrape body: cached snapshot families, then the registry's live metrics. */
  async render(format: Format, gzip: boolean): Promise<Rendered> {
    const cache = this.cache;
    const { counters, live } = await this.parts(format);
    const end = format === "openmetrics" ? `${live}# EOF\n` : live;
    const tail = Buffer.concat([counters, Buffer.from(end, "utf8")]);
    const contentType = format === "openmetrics" ? OPENMETRICS_TYPE : PROMETHEUS_TYPE;
    if (!gzip) return { body: [...cache.gauges, tail], contentType };
    this.gzipWanted = true;
    // Concatenated gzip members decompress to the concatenated bodies (RFC 1952, section 2.2).
    return {
      body: [...(await this.gaugesGzip(cache)), gzipSync(tail, { level: GZIP_LEVEL })],
      contentType,
      contentEncoding: "gzip",
    };
  }

  private gaugesGzip(cache: Cached): Promise<Buffer[]> {
    cache.gaugesGzip ??= gzipChunks(cache.gauges);
    return cache.gaugesGzip;
  }

  private warnOnce(key: string, obj: object, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.o.logger?.warn(obj, msg);
  }
}

/** When the walk a walked snapshot carries ended: when it could tell which ids had gone. */
function walkEndedAt(snapshot: Snapshot): number {
  const walk = snapshot.collectors.sandboxes;
  return walk.lastAttemptAt + walk.durationMs;
}
