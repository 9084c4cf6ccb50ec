// The opt-in usage collector: the latest CPU, memory and disk sample of this shard's running
// sandboxes, read in batches of GET /sandboxes/metrics after a complete walk.
import { PlatformHttpError, PlatformNotFoundError } from "../platform/http-errors.js";
import type { SandboxUsage } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { ExporterError } from "../util/errors.js";
import type { Capabilities } from "./capabilities.js";
import { failure, type Outcome, type PlatformReader } from "./collector.js";
import { forEachRow, type SandboxList } from "./sandbox-table.js";
import type { UsageData } from "./snapshot.js";

/** Ids per GET /sandboxes/metrics: E2B's maximum. */
export const USAGE_BATCH = 100;
/**
 * Bytes of URL-encoded ids (with their separators) in one GET /sandboxes/metrics: servers and
 * proxies refuse request lines past about 8 KB (414, 431), which would fail a whole batch.
 */
export const USAGE_QUERY_BYTES = 6_000;
/** Bytes of the separator between two ids once URL-encoded (`,` -> `%2C`). */
const SEPARATOR_BYTES = 3;
/**
 * Batches in flight at once. Usage reads take tokens of the poll's request budget: with few in
 * flight, a walk's next page never waits behind more than a couple of them.
 */
const USAGE_CONCURRENCY = 2;

/** Settings of the usage collector; the poller runs it when they are given. */
export interface UsageOptions {
  /** Least time between the starts of two reads; a read starts only after a complete walk. */
  intervalMs: number;
  /** States whose sandboxes are asked about (the platform samples running sandboxes only). */
  runningStates: readonly string[];
}

/** A usage read ran out of time before it had asked about every sandbox. */
export class UsageDeadlineError extends ExporterError {
  constructor(asked: number, batches: number, budgetMs: number) {
    super(
      "ERR_USAGE_DEADLINE",
      `GET /sandboxes/metrics: ${asked} of ${batches} batches read within ${budgetMs} ms; the other sandboxes keep their earlier samples`,
    );
  }
}

/** The ids a read asks about: the walk's sandboxes (this shard's) in a running state, each once. */
export function usageTargets(list: SandboxList, o: UsageOptions): string[] {
  const running = new Set(o.runningStates.map((s) => s.toLowerCase()));
  const ids = new Set<string>();
  forEachRow(list, (id, _template, state) => {
    if (running.has(state)) ids.add(id);
  });
  return [...ids];
}

/**
 * `ids` cut into batches of at most `maxIds` ids and `maxBytes` bytes of URL-encoded query; an
 * id that cannot fit alone is left out and counted in `tooLong`.
 */
export function usageBatches(
  ids: readonly string[],
  maxIds = USAGE_BATCH,
  maxBytes = USAGE_QUERY_BYTES,
): { batches: string[][]; tooLong: number } {
  const batches: string[][] = [];
  let tooLong = 0;
  let batch: string[] = [];
  let bytes = 0;
  for (const id of ids) {
    const size = encodeURIComponent(id).length;
    if (size > maxBytes) {
      tooLong++;
      continue;
    }
    const added = batch.length === 0 ? size : size + SEPARATOR_BYTES;
    if (batch.length >= maxIds || bytes + added > maxBytes) {
      batches.push(batch);
      batch = [id];
      bytes = size;
    } else {
      batch.push(id);
      bytes += added;
    }
  }
  if (batch.length > 0) batches.push(batch);
  return { batches, tooLong };
}

/** What one read brought. */
export interface UsageRead {
  /** The new samples, with the earlier ones of the ids whose batch failed or was not asked. */
  samples: Map<string, SandboxUsage>;
  /** Batches asked. */
  requests: number;
  /** The first failure: a batch's error, or UsageDeadlineError. */
  error?: unknown;
  /** At least one batch was answered. */
  answered: boolean;
  /** Ids left out because each alone is too long for a request (see usageBatches). */
  tooLong: number;
}

/**
 * Asks about `ids` in batches (see usageBatches). Starts no batch once `budgetMs` have passed on
 * `clock`, nor after the platform refused the endpoint itself (404, 405, 403, 401): that answer
 * is about every batch. A batch that failed, or was never asked, keeps its ids' samples of
 * `previous`; ids no longer asked about are dropped.
 */
export async function readUsage(
  read: (ids: readonly string[]) => Promise<Map<string, SandboxUsage>>,
  ids: readonly string[],
  previous: ReadonlyMap<string, SandboxUsage>,
  clock: Clock,
  budgetMs: number,
): Promise<UsageRead> {
  const deadline = clock.now() + budgetMs;
  const { batches, tooLong } = usageBatches(ids);
  const samples = new Map<string, SandboxUsage>();
  let next = 0;
  let answered = false;
  let error: unknown;
  let refused = false;
  const keep = (batch: readonly string[]): void => {
    for (const id of batch) {
      const u = previous.get(id);
      if (u !== undefined) samples.set(id, u);
    }
  };
  const worker = async (): Promise<void> => {
    while (next < batches.length && !refused && clock.now() < deadline) {
      const batch = batches[next++] as string[];
      try {
        const got = await read(batch);
        answered = true;
        // Only what was asked: an answer naming other ids must not add series.
        for (const id of batch) {
          const u = got.get(id);
          if (u !== undefined) samples.set(id, u);
        }
      } catch (err) {
        error ??= err;
        if (refusesEndpoint(err)) refused = true;
        keep(batch);
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(USAGE_CONCURRENCY, batches.length) }, () => worker()),
  );
  if (next < batches.length) {
    for (const batch of batches.slice(next)) keep(batch);
    if (!refused) error ??= new UsageDeadlineError(next, batches.length, budgetMs);
  }
  return {
    samples,
    requests: next,
    answered,
    tooLong,
    ...(error !== undefined ? { error } : {}),
  };
}

/** An answer about the endpoint, not the batch: it is not served, or not to us. */
function refusesEndpoint(err: unknown): boolean {
  return (
    err instanceof PlatformNotFoundError ||
    (err instanceof PlatformHttpError && [401, 403, 405].includes(err.status))
  );
}

/** What the usage collector needs around it. */
export interface UsageCollectorOptions {
  usage: UsageOptions;
  reader: PlatformReader;
  clock: Clock;
  /** The poll interval: a read starts no batch once it has passed. */
  intervalMs: number;
  capabilities: Capabilities;
  /** A read ended: its outcome waits for the next snapshot (published at once outside a tick). */
  onRead: () => Promise<void>;
  onError?: (err: unknown) => void;
}

/**
 * The opt-in usage collector: after a complete walk, at most once per usage.intervalMs, reads the
 * walk's running sandboxes in batches. Neither walks nor ticks wait for it.
 */
export class UsageCollector {
  /** The read in flight, if any. */
  inFlight: Promise<void> | undefined;
  /** A read ended and no snapshot has carried its outcome yet. */
  pending = false;
  /** The latest read's outcome. */
  outcome: Outcome<unknown> | undefined;
  private startedAt: number | undefined;
  /** The samples of the last read (a failed batch's ids keep the ones before). */
  private samples: ReadonlyMap<string, SandboxUsage> = new Map();
  /** Ids the last read left out as too long for a request. */
  private skipped = 0;

  constructor(private readonly o: UsageCollectorOptions) {}

  /** How often it reads: at most once per poll interval, however short usage.intervalMs is. */
  get everyMs(): number {
    return Math.max(this.o.usage.intervalMs, this.o.intervalMs);
  }

  /** The snapshot's part: the samples of the last read. */
  data(): UsageData {
    return { samples: this.samples, skippedIds: this.skipped };
  }

  /**
   * Starts a read of `list` (a complete walk's) when none is running, its interval has passed and
   * no capability re-check is awaited.
   */
  start(list: SandboxList): void {
    const { usage, clock, intervalMs, reader, capabilities } = this.o;
    if (this.inFlight || capabilities.waiting("usage")) return;
    const startedAt = clock.now();
    // Half a poll interval of slack, or a read due just after a walk ends waits a whole interval.
    const last = this.startedAt;
    if (last !== undefined && startedAt - last < usage.intervalMs - intervalMs / 2) return;
    this.startedAt = startedAt;
    const run = async (): Promise<void> => {
      try {
        const ids = usageTargets(list, usage);
        const read = (batch: readonly string[]) => reader.sandboxUsage(batch);
        const r = await readUsage(read, ids, this.samples, clock, intervalMs);
        this.samples = r.samples;
        this.skipped = r.tooLong;
        const durationMs = clock.now() - startedAt;
        this.outcome =
          r.error === undefined
            ? { ok: true, requests: r.requests, startedAt, durationMs }
            : { ...failure(r.error, startedAt, durationMs), requests: r.requests };
        if (r.answered) capabilities.answered("usage");
        // A read that asked nothing (no running sandboxes) says nothing about the endpoint.
        if (r.requests > 0) capabilities.learn("usage", this.outcome);
        this.pending = true;
        await this.o.onRead();
      } catch (err) {
        this.o.onError?.(err);
      } finally {
        this.inFlight = undefined;
      }
    };
    this.inFlight = run();
  }
}
