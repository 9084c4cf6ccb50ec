// The collector contract: what the poller's scheduler needs of a collector, and the outcome of one
// read, which every collector's status, staleness and capability learning go through.
import type { LifecycleEventSink } from "../platform/events.js";
import { PlatformHttpError, PlatformNotFoundError } from "../platform/http-errors.js";
import type { SandboxEventPage } from "../platform/normalize/events.js";
import type { DeferredPage, TemplateBuildStatus } from "../platform/normalize/normalize.js";
import type {
  TeamMetricMax,
  TeamMetricName,
  TeamMetricPoint,
} from "../platform/normalize/team-metrics.js";
import type {
  ClusterOverview,
  Health,
  PlatformNode,
  Sandbox,
  SandboxUsage,
  Template,
} from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { formatDuration } from "../util/duration.js";
import { ExporterError } from "../util/errors.js";
import type { TickData, TickName } from "./snapshot.js";

/** The read-only part of the control client that the collectors need. */
export interface PlatformReader {
  health(): Promise<Health>;
  clusterOverview(): Promise<ClusterOverview>;
  listNodes(): Promise<PlatformNode[]>;
  getNode(id: string): Promise<PlatformNode>;
  listTemplates(): Promise<Template[]>;
  getTemplate(id: string): Promise<Template>;
  /** One build's status and, for a failed build, its reason. */
  templateBuildStatus(templateId: string, buildId: string): Promise<TemplateBuildStatus>;
  listSandboxPage(
    q: { state?: string; metadata?: string; nextToken?: string; limit?: number },
    opts?: { slim?: boolean; keep?: (id: string) => boolean },
  ): Promise<DeferredPage<Sandbox>>;
  /** Latest usage sample of each of at most 100 sandboxes; ids without one are absent. */
  sandboxUsage(ids: readonly string[]): Promise<Map<string, SandboxUsage>>;
  /** One page of the team's lifecycle events (GET /events/sandboxes), newest first by default. */
  listSandboxEvents(q: {
    offset?: number;
    limit?: number;
    orderAsc?: boolean;
    types?: readonly string[];
    sandboxId?: string;
  }): Promise<SandboxEventPage>;
  /** The team's concurrent sandboxes and start rate between two Unix times (s); `[]`: no data. */
  teamMetrics(teamId: string, startS: number, endS: number): Promise<TeamMetricPoint[]>;
  /** The highest value of one team metric between two Unix times (s). */
  teamMetricsMax(
    teamId: string,
    metric: TeamMetricName,
    startS: number,
    endS: number,
  ): Promise<TeamMetricMax>;
}

/** What one read brought: its value, and the requests it made (pages, detail reads). */
export interface Reading<T> {
  value: T;
  requests: number;
}

/** Where a tick collector runs, and what it may read there. */
export interface TickContext {
  reader: PlatformReader;
  /** Read /nodes/{id} for every node (poll.nodeDetails). */
  nodeDetails: boolean;
  /** Read /templates/{id} for every template (poll.templateDetails). */
  templateDetails: boolean;
  /** Where the events collector (poll.events) passes each event read; undefined: events off. */
  events?: { sink: LifecycleEventSink; lookbackMs: number; maxPages: number };
  /** The clock a collector's time windows are read on (the team metrics' start and end). */
  clock: Clock;
  /** The team whose capacity teamMetrics reads: platform.teamId, else learned; undefined: unknown. */
  teamId?: () => string | undefined;
  /** Window of the team metrics' maxima (poll.teamMetricsWindowMs); default 1 h. */
  teamMetricsWindowMs?: number;
}

/**
 * A collector refreshed on every tick, whatever the sandbox walk does: one request or a few. One
 * file each, registered in `collectors.ts`; its data type is its entry of `TickData`.
 */
export interface TickCollector<N extends TickName = TickName> {
  readonly name: N;
  /** The platform may not serve it: a 404, 405 or 403 before any success makes it unsupported. */
  readonly optional: boolean;
  /**
   * A collector whose read, when it runs this tick, ends (or reaches its deadline) before this
   * one's starts: what it learns (the events' team id) is there for this read. Collectors without
   * `after` start first; when that one is still reading from an earlier tick, this one starts at once.
   */
  readonly after?: TickName;
  /**
   * Whether this instance reads it: cluster-wide data comes from shard 0 only; an opt-in collector
   * runs only when its setting named it in `optIn`.
   */
  runs(where: { clusterWide: boolean; readHealth: boolean; optIn: ReadonlySet<string> }): boolean;
  /** `previous`: its latest good data, which a collector may reuse instead of asking again. */
  read(ctx: TickContext, previous?: TickData[N]): Promise<Reading<TickData[N]>>;
}

/** The outcome of one read of a collector. */
export interface Outcome<T> {
  /** The data read: on a success, or on a read that ended past its deadline (failed, data kept). */
  value?: T;
  ok: boolean;
  requests: number;
  startedAt: number;
  durationMs: number;
  error?: { code: string; message: string };
  /** The endpoint answered 404, 405 or 403: the platform does not serve it (to us). */
  unsupportedAnswer?: boolean;
  /** The endpoint answered 401: unsupported for us when the key works elsewhere (see Capabilities). */
  refused?: boolean;
}

/**
 * A tick collector's read ran past its deadline (one poll interval): it fails, and is not started
 * again until it ends. `tookMs`: it has ended since, that late (its data is kept, still failed).
 */
export class CollectorDeadlineError extends ExporterError {
  constructor(name: TickName, deadlineMs: number, tookMs?: number) {
    super(
      "ERR_COLLECTOR_DEADLINE",
      tookMs === undefined
        ? `${name}: read still running after its deadline of ${formatDuration(deadlineMs)} (one poll interval)`
        : `${name}: read took ${formatDuration(tookMs)}, past its deadline of ${formatDuration(deadlineMs)} (one poll interval)`,
    );
  }
}

/** Runs `read`, timing it on `clock`; a rejection becomes a failed outcome, never an exception. */
export async function attempt<T>(
  clock: Clock,
  read: () => Promise<Reading<T>>,
): Promise<Outcome<T>> {
  const startedAt = clock.now();
  try {
    const { value, requests } = await read();
    return { value, ok: true, requests, startedAt, durationMs: clock.now() - startedAt };
  } catch (err) {
    return failure(err, startedAt, clock.now() - startedAt);
  }
}

/** The outcome of a read that failed with `err`. */
export function failure(err: unknown, startedAt: number, durationMs: number): Outcome<never> {
  return {
    ok: false,
    requests: 0,
    startedAt,
    durationMs,
    error: describeError(err),
    unsupportedAnswer:
      err instanceof PlatformNotFoundError ||
      (err instanceof PlatformHttpError && (err.status === 403 || err.status === 405)),
    refused: err instanceof PlatformHttpError && err.status === 401,
  };
}

/** Stable code and a one-line message of any error, for /status and metrics. */
export function describeError(err: unknown): { code: string; message: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      code: typeof code === "string" ? code : "ERR_UNKNOWN",
      message: err.message.split("\n")[0] ?? "",
    };
  }
  return { code: "ERR_UNKNOWN", message: String(err) };
}
