// The immutable result of one poll cycle: what /metrics, /status and the policy engine read.
import type {
  ClusterOverview,
  Health,
  PlatformNode,
  SandboxUsage,
  Template,
} from "../platform/types.js";
import type { ListRead } from "./paging.js";
import type { SandboxList } from "./sandbox-table.js";

/**
 * The data of the collectors refreshed every tick, by collector name. A new tick collector adds
 * its entry from its own file (`declare module "./snapshot.js" { interface TickData {...} }`).
 */
export interface TickData {
  health: Health;
  overview: ClusterOverview;
  nodes: readonly PlatformNode[];
  templates: readonly Template[];
}
export type TickName = keyof TickData;
/** The independent parts of a poll cycle (listed in catalog.ts); each succeeds or fails on its own. */
export type CollectorName = TickName | "sandboxes" | "usage";

/** Outcome of one collector in the latest cycle. */
export interface CollectorStatus {
  name: CollectorName;
  /** True when this cycle's attempt succeeded. */
  success: boolean;
  /** True when the data held for this collector is not from this cycle (it failed, or never ran). */
  stale: boolean;
  /** True when this instance does not run the collector (cluster-wide data comes from shard 0). */
  skipped?: boolean;
  /** True when the platform does not serve the collector's endpoint (404/405/403 before any success). */
  unsupported?: boolean;
  /** Epoch ms the latest attempt started. */
  lastAttemptAt: number;
  /** Epoch ms of the latest successful attempt, if any. */
  lastSuccessAt?: number;
  /** Epoch ms after which the data is stale even if no attempt ended since (two intervals old). */
  staleAfter?: number;
  durationMs: number;
  /** Requests this collector made in the latest attempt (pages, detail reads). */
  requests: number;
  error?: { code: string; message: string };
  /** The paged lists of the latest attempt, each with where it stopped short (if it did). */
  lists?: readonly ListRead[];
}

/**
 * Whether a collector's data is stale at `now`: its latest attempt failed, or its last success
 * is older than two intervals. Read when a scrape or /status asks, never only when a tick
 * publishes: ticks waiting on the request budget must not freeze the flag.
 */
export function staleAt(c: Pick<CollectorStatus, "stale" | "staleAfter">, now: number): boolean {
  return c.stale || (c.staleAfter !== undefined && now > c.staleAfter);
}

/** What a snapshot carries of the opt-in usage collector when it is on. */
export interface UsageData {
  /**
   * Latest sample by sandbox id, of the last read: a sandbox the platform did not answer for has
   * none; the sandboxes of a batch that failed keep the samples of the read before.
   */
  samples: ReadonlyMap<string, SandboxUsage>;
  /** Sandboxes of the last read left out because their id alone is too long for a request. */
  skippedIds?: number;
}

/** Everything one poll cycle produced, plus the last good data of collectors that failed. */
export interface Snapshot extends Partial<TickData> {
  /** Monotonic snapshot number, starting at 1 (a read that ended between ticks publishes one too). */
  cycle: number;
  /** Poll cycles so far: snapshots that carried a walk's outcome (what poll_cycles_total counts). */
  pollCycles?: number;
  /**
   * Epoch ms the oldest read this snapshot brings started (the collectors in `refreshed`, usage
   * aside); `finishedAt` when it brings none. An outcome carried over (an unsupported collector's,
   * a read still running) does not count.
   */
  startedAt: number;
  /** Epoch ms the cycle finished. */
  finishedAt: number;
  /**
   * This shard's sandboxes of the walk (the walk drops the others' at the list). An array when
   * per-sandbox series or the policy need whole records, else a compact SandboxTable.
   */
  sandboxes?: SandboxList;
  /** Running sandboxes as the platform counted them (E2B's X-Total-Running), from the last walk. */
  totalRunning?: number;
  /** The usage collector's samples, when it is on (its status is in `collectors`). */
  usage?: UsageData;
  /** True when this snapshot carries a walk of every page of /v2/sandboxes that just ended. */
  sandboxesComplete: boolean;
  /**
   * True when this snapshot is the first to carry the outcome of a walk (success or failure); a
   * tick whose walk is still running publishes the small collectors with the last walk's list.
   */
  walked: boolean;
  /** Collectors whose outcome is new in this snapshot (the others repeat an earlier one). */
  refreshed: readonly CollectorName[];
  /** Every collector's status; one this instance does not run is `skipped`. */
  collectors: Readonly<Record<CollectorName, CollectorStatus>>;
}

/** Every collector's status in a snapshot, in the registry's order. */
export function collectorStatuses(s: Snapshot): CollectorStatus[] {
  return Object.values(s.collectors);
}
