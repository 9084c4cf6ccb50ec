// The collector contract: what the poller's scheduler needs of a collector, and the outcome of one
// read, which every collector's status, staleness and capability learning go through.
import type { Registry } from "prom-client";
import type { Config } from "../config/settings.js";
import type { AnySlice } from "../config/slice.js";
import type { FamilyDescriptor } from "../exposition/descriptor.js";
import type { Family } from "../exposition/text.js";
import type { ValueGuard } from "../exposition/value-guard.js";
import type { CallQuery, JsonReply } from "../platform/control/control.js";
import type { LifecycleEventSink } from "../platform/events.js";
import { PlatformHttpError, PlatformNotFoundError } from "../platform/http-errors.js";
import type { SandboxEventPage } from "../platform/normalize/events.js";
import type {
  DeferredPage,
  Normalizer,
  TemplateBuildStatus,
} from "../platform/normalize/normalize.js";
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
import { ExporterError, errorSummary } from "../util/errors.js";
import type { ListRead } from "./paging.js";
import type { Snapshot, TickData, TickName } from "./snapshot.js";

/** The read-only part of the control client that the collectors need. */
export interface PlatformReader {
  /** The reader's normalizer: a collector parsing its own endpoint's records uses it (field map, invalid counts). */
  readonly normalizer: Normalizer;
  /**
   * GET of an endpoint whose parser the collector owns: the parsed JSON body, unvalidated, or what
   * `parse` makes of it (what it throws becomes PlatformBodyError, scrubbed, counted as bad_body).
   */
  getJson<T = unknown>(
    endpoint: string,
    path: string,
    query?: CallQuery,
    parse?: (body: unknown) => T,
  ): Promise<T>;
  /**
   * getJson with the answer's headers (lower-case names), for a walk paged by a header.
   * `background`: an inventory read, granted only while no other request waits (RequestLimiter).
   * `notFoundExpected`: a 404 is an answer the caller handles, not an API error.
   */
  getJsonReply<T = unknown>(
    endpoint: string,
    path: string,
    query?: CallQuery,
    parse?: (body: unknown) => T,
    opts?: { background?: boolean; notFoundExpected?: boolean },
  ): Promise<JsonReply<T>>;
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
  /** The paged lists it read, each with where it stopped short of the end (if it did). */
  lists?: readonly ListRead[];
}

/** The poll settings (config.poll): the poll's own, and every collector's slice of them. */
export type PollSettings = Config["poll"];

/** Where a tick collector runs, and what it may read there. */
export interface TickContext {
  reader: PlatformReader;
  /** The clock a collector's time windows are read on (the team metrics' start and end). */
  clock: Clock;
  /** The poll settings: each collector reads its own fields (those of its settings slice). */
  poll: PollSettings;
  /** The kind of platform (platform.flavor): what its API serves; undefined: not known, learned. */
  flavor?: Config["platform"]["flavor"];
  /** Where the events collector passes each event read (the ledger); undefined: nowhere to. */
  eventSink?: LifecycleEventSink;
  /** This replica's shard (shard.index of shard.total); absent: unsharded. */
  shard?: { index: number; total: number };
  /** The team whose capacity teamMetrics reads: platform.teamId, else learned; undefined: unknown. */
  teamId?: () => string | undefined;
  /** Time between two ticks: a paged list reads for half of it at most (poll.listMaxMs unset). */
  intervalMs?: number;
  /** Aborts at the read's deadline: a paged list asks for no page after it. */
  signal?: AbortSignal;
}

/** What a collector's families are made with, once, when the metrics layer starts. */
export interface FamiliesContext {
  /** Metric name prefix (metrics.namespace). */
  ns: string;
  /** The prom-client registry, for a family updated outside the snapshot. */
  registry: Registry;
}

/** What a collector's updater is given beside its data, on every snapshot (shard 0 only). */
export interface FamilyView {
  /** The whole snapshot, for a family that depends on another collector's data. */
  snapshot: Snapshot;
  /** Cuts and scrubs every label value from the platform. */
  guard: ValueGuard;
  /** A numeric field left out because its metric name was taken: "<endpoint> <field>". */
  skipped(field: string): void;
}

/**
 * Renders a collector's families from its latest data (a method type, so that the updater of one
 * collector's data is one of any collector's in the registry's list).
 */
export type FamilyUpdater<T> = {
  update(data: T, view: FamilyView): Family[];
}["update"];

/**
 * A collector refreshed on every tick, whatever the sandbox walk does: one request or a few. One
 * file (or folder) each, registered with one line in `catalog.ts`: it declares its data type (its
 * entry of `TickData`, by module augmentation), its settings slice and opt-in, its read and its
 * metric families; nothing outside its folder names it.
 */
export interface TickCollector<
  N extends TickName = TickName,
  S extends AnySlice | undefined = AnySlice | undefined,
> {
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
   * The bool of `poll` that turns it on (an opt-in collector); absent: it needs none. The poller
   * applies it: while the setting is off, the collector does not run, whatever `runs` says.
   */
  readonly optIn?: OptInSetting;
  /** Its settings (fields under `poll`, with their defaults and env/flag rows), if it has any. */
  readonly settings?: S;
  /**
   * `cluster`: it reads the whole platform (health, overview, nodes), once however many teams are
   * watched; absent: it reads the team of the key, once per team.
   */
  readonly scope?: "cluster";
  /** Whether this instance reads it (its opt-in aside): cluster-wide data comes from shard 0 only. */
  runs(where: { clusterWide: boolean; readHealth: boolean }): boolean;
  /** `previous`: its latest good data, which a collector may reuse instead of asking again. */
  read(ctx: TickContext, previous?: TickData[N]): Promise<Reading<TickData[N]>>;
  /** Makes its metric families (once); the updater renders them from each snapshot's data. */
  families?(ctx: FamiliesContext): FamilyUpdater<TickData[N]>;
  /** The families it writes, as descriptors: the catalog lists them, the reference is written from them. */
  readonly declares?: readonly FamilyDescriptor[];
}

/** The names of the bool poll settings: what can turn an opt-in collector on. */
export type OptInSetting = {
  [K in keyof PollSettings]: PollSettings[K] extends boolean ? K : never;
}[keyof PollSettings];

/** The collectors of `collectors` whose opt-in setting is on in `poll`. */
export function optedIn(collectors: readonly TickCollector[], poll: PollSettings): Set<string> {
  return new Set(collectors.filter((c) => c.optIn && poll[c.optIn] === true).map((c) => c.name));
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
  /** The paged lists the read went through, and where each stopped short (see Reading). */
  lists?: readonly ListRead[];
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

/**
 * A read that failed part way (bad paging, one list of several failing): it fails with the cause's
 * code and message, and what it read is kept as the collector's data, so one list never hides
 * another and a looping list keeps what was read.
 */
export class IncompleteReadError extends ExporterError {
  constructor(
    readonly reason: unknown,
    readonly partial: Reading<unknown>,
  ) {
    const { code, message } = errorSummary(reason);
    super(code, message, { cause: reason });
  }
}

/** Runs `read`, timing it on `clock`; a rejection becomes a failed outcome, never an exception. */
export async function attempt<T>(
  clock: Clock,
  read: () => Promise<Reading<T>>,
): Promise<Outcome<T>> {
  const startedAt = clock.now();
  try {
    const { value, requests, lists } = await read();
    const durationMs = clock.now() - startedAt;
    return { value, ok: true, requests, startedAt, durationMs, ...(lists ? { lists } : {}) };
  } catch (err) {
    // A partial read's data is the collector's own (IncompleteReadError).
    return failure(err, startedAt, clock.now() - startedAt) as Outcome<T>;
  }
}

/** The outcome of a read that failed with `err`. */
export function failure(err: unknown, startedAt: number, durationMs: number): Outcome<unknown> {
  const partial = err instanceof IncompleteReadError ? err.partial : undefined;
  const cause = err instanceof IncompleteReadError ? err.reason : err;
  return {
    ok: false,
    requests: partial?.requests ?? 0,
    startedAt,
    durationMs,
    error: errorSummary(err),
    unsupportedAnswer:
      cause instanceof PlatformNotFoundError ||
      (cause instanceof PlatformHttpError && (cause.status === 403 || cause.status === 405)),
    refused: cause instanceof PlatformHttpError && cause.status === 401,
    ...(partial ? { value: partial.value } : {}),
    ...(partial?.lists ? { lists: partial.lists } : {}),
  };
}

/** A 404 or 405: the platform has no such route (an older install, another kind of platform). */
export function routeMissing(err: unknown): boolean {
  return (
    err instanceof PlatformNotFoundError || (err instanceof PlatformHttpError && err.status === 405)
  );
}
