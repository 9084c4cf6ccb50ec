// The team's concurrency limit and the creates the platform refused with 429. E2B serves the limit
// nowhere in its API: it comes from platform.teamConcurrencyLimit (source="config") or from the
// text of a 429 that names it (source="learned"); both show when both are known. A 429 naming a
// limit out of range (classifyCreateRejection) teaches nothing: it is counted, and logged once.
import { Counter, Gauge, type Registry } from "prom-client";
import { counter, gauge, metricOptions, setting } from "../exposition/descriptor.js";
import { PlatformFacts } from "../platform/facts.js";
import {
  CREATE_REJECT_REASONS,
  type CreateRejectReason,
  MAX_TEAM_CONCURRENCY_LIMIT,
} from "../platform/normalize/team-metrics.js";

/** The team a create's 429 names labels these families when teams are discovered. */
const DISCOVERED_TEAM = { name: "team", with: setting("platform.discoverTeams") };

export const TEAM_LIMIT_IGNORED = counter(
  "team_concurrent_sandboxes_limit_ignored_total",
  `429s of a create whose text named a concurrency limit that is not an integer from 1 to ${MAX_TEAM_CONCURRENCY_LIMIT}: not learned (the first is logged).`,
  [DISCOVERED_TEAM],
);
export const CREATE_REJECTED = counter(
  "sandbox_create_rejected_total",
  "Sandbox creates (POST /sandboxes) the platform refused with 429, by reason read from its text: concurrency_limit (the team's concurrent sandboxes), rate_limit, other.",
  ["reason", DISCOVERED_TEAM],
);
export const TEAM_LIMIT = gauge(
  "team_concurrent_sandboxes_limit",
  "Concurrent sandboxes the team may run: source=config from platform.teamConcurrencyLimit, source=learned from the latest 429 of a create that named it.",
  ["source"],
);

/** The concurrency limit's families. */
export const TEAM_LIMIT_FAMILIES = [TEAM_LIMIT_IGNORED, CREATE_REJECTED, TEAM_LIMIT] as const;

/** Counts refused creates by reason, and keeps the concurrency limit the latest 429 named. */
export class TeamLimitMetrics {
  private readonly rejected: Counter<"reason">;
  private readonly ignored: Counter;
  private readonly facts: PlatformFacts;
  private ignoredLogged = false;

  constructor(
    private readonly o: {
      registry: Registry;
      ns: string;
      configLimit?: number;
      /** Where a learned limit is kept (the exporter's shared facts); default: its own. */
      facts?: PlatformFacts;
      /** Where the first out-of-range limit is reported. */
      logger?: { warn(obj: object, msg: string): void };
    },
  ) {
    this.facts = o.facts ?? new PlatformFacts({ teamConcurrencyLimit: o.configLimit });
    const registers = [o.registry];
    this.ignored = new Counter({
      ...metricOptions(o.ns, TEAM_LIMIT_IGNORED),
      registers,
    });
    this.rejected = new Counter({
      ...metricOptions<"reason">(o.ns, CREATE_REJECTED),
      registers,
    });
    for (const r of CREATE_REJECT_REASONS) this.rejected.labels(r).inc(0);
    const limits = () => this.limits();
    new Gauge({
      ...metricOptions(o.ns, TEAM_LIMIT),
      registers,
      collect() {
        this.reset();
        for (const [source, value] of limits()) this.labels(source).set(value);
      },
    });
  }

  /** The limit the latest 429 named, if any did. */
  get learned(): number | undefined {
    return this.facts.learnedConcurrencyLimit();
  }

  /** A create was refused with 429 (ControlClient's onCreateRejected). */
  createRejected(reason: CreateRejectReason, limit?: number, ignoredLimit?: string): void {
    this.rejected.labels(reason).inc();
    if (limit !== undefined) this.facts.learnConcurrencyLimit(limit);
    if (ignoredLimit === undefined) return;
    this.ignored.inc();
    if (this.ignoredLogged) return;
    this.ignoredLogged = true;
    this.o.logger?.warn(
      { limit: ignoredLimit, max: MAX_TEAM_CONCURRENCY_LIMIT },
      "a create's 429 named a concurrency limit out of range; not learned (counted in team_concurrent_sandboxes_limit_ignored_total, logged once)",
    );
  }

  private limits(): Array<[string, number]> {
    const out: Array<[string, number]> = [];
    const configured = this.facts.configuredConcurrencyLimit();
    const learned = this.facts.learnedConcurrencyLimit();
    if (configured !== undefined) out.push(["config", configured]);
    if (learned !== undefined) out.push(["learned", learned]);
    return out;
  }
}
