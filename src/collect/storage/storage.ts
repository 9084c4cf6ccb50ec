// Storage inventory (poll.storage, off by default): the team's snapshots (E2B's paged GET
// /snapshots) and volumes (GET /volumes) every tick, and the snapshots first seen. Storage outlives
// the sandboxes the policy pauses or kills, and costs while it lasts. Cluster-wide (shard 0).
// A list the platform does not serve (404 or 405) is left out and asked again after
// poll.capabilityRecheckMs; when neither is served, the collector is unsupported. Each list reads
// poll.listPagesPerTick pages and poll.listMaxMs a tick at most, in the background of the request
// budget, and goes on next tick where it stopped (see paging.ts readPass).
import {
  IncompleteReadError,
  routeMissing,
  type TickCollector,
  type TickContext,
} from "../collector.js";
import {
  type ListPass,
  type ListRead,
  type PageBounds,
  type PassRead,
  tickBounds,
} from "../paging.js";
import { type DetailReadCounts, readDetails } from "./snapshot-details.js";
import {
  detailsToRead,
  factsOf,
  type SnapshotFact,
  type SnapshotSummary,
  summarize,
} from "./snapshot-facts.js";
import { STORAGE_FAMILIES, storageFamilies } from "./storage-families.js";
import { readList, type StorageKind, type StoredTally } from "./storage-lists.js";
import { storageSlice } from "./storage-settings.js";

/**
 * How many of one kind the platform listed. Not by template: E2B's SnapshotInfo (snapshotID,
 * names) and Volume (volumeID, name) name none.
 */
export interface StorageCount {
  count: number;
  /**
   * False while no pass over the list has reached its end: the count is what was read so far.
   * Once one has, the count is the last complete pass's until the next one ends.
   */
  complete: boolean;
}

/** The collector's data: what the latest read found, carried from tick to tick. */
export interface StorageInventory {
  /** Absent: the platform does not serve the list (or it was never read). */
  snapshots?: StorageCount;
  volumes?: StorageCount;
  /** A list the platform does not serve: when it is asked again (epoch ms). */
  unserved: Partial<Record<StorageKind, number>>;
  /**
   * Each snapshot of the latest complete read of /snapshots (the newest MAX_KNOWN_SNAPSHOTS, newest
   * first), with what its details said; absent before the first complete read.
   */
  facts?: ReadonlyMap<string, SnapshotFact>;
  /** The facts as the families show them, at this read's time. */
  summary?: SnapshotSummary;
  /** Snapshots first seen since start, those of the first read of /snapshots aside. */
  firstSeen: number;
  /** Detail reads so far, by what came of them. */
  detailReads: DetailReadCounts;
  /** Per-snapshot series (poll.storagePerSnapshotMetrics), at most this many snapshots; 0: none. */
  perSnapshotSeries: number;
  /** A pass over a list that goes on next tick (it stopped at its page or time limit). */
  passes?: Partial<Record<StorageKind, ListPass<StoredTally>>>;
}

declare module "../snapshot.js" {
  interface TickData {
    storage: StorageInventory;
  }
}

export const storageCollector: TickCollector<"storage", typeof storageSlice> = {
  name: "storage",
  optional: true,
  optIn: "storage",
  settings: storageSlice,
  runs: (where) => where.clusterWide,
  read: (ctx, previous) => readStorage(ctx, previous),
  families: storageFamilies,
  declares: STORAGE_FAMILIES,
};

const KINDS = ["snapshots", "volumes"] as const;

/**
 * One tick's reading of both lists, each on its own: a list that fails, loops or is not served
 * never hides the other, which is published (the collector then fails, its data kept).
 */
async function readStorage(ctx: TickContext, previous?: StorageInventory) {
  const { reader, clock, poll } = ctx;
  const now = clock.now();
  const before: StorageInventory = previous ?? {
    unserved: {},
    firstSeen: 0,
    detailReads: { ok: 0, not_found: 0, failed: 0 },
    perSnapshotSeries: 0,
  };
  const kinds = KINDS.filter((k) => !(now < (before.unserved[k] ?? Number.NEGATIVE_INFINITY)));
  const bounds = tickBounds({ ...ctx, now: () => clock.now() });
  const detailReads = { ...before.detailReads };
  // The details are read beside the lists, not after them: a long list takes its whole tick, and
  // details read only with what it leaves would wait for the pass's last tick.
  const [reads, learned] = await Promise.all([
    Promise.allSettled(kinds.map((k) => readList(reader, k, bounds, before.passes?.[k]))),
    readDetailsOf(ctx, before.facts, bounds, detailReads),
  ]);
  const value: StorageInventory = {
    unserved: {},
    firstSeen: before.firstSeen,
    detailReads,
    perSnapshotSeries: poll.storagePerSnapshotMetrics ? poll.storageMaxSnapshotSeries : 0,
  };
  const lists: ListRead[] = [];
  let requests = 0;
  let unserved: unknown;
  let failed: unknown;
  for (const kind of KINDS) {
    const got = reads[kinds.indexOf(kind)];
    if (got === undefined) {
      // Not asked this tick: still not served.
      value.unserved[kind] = before.unserved[kind] as number;
    } else if (got.status === "rejected") {
      requests++;
      if (routeMissing(got.reason)) {
        unserved ??= got.reason;
        value.unserved[kind] = now + poll.capabilityRecheckMs;
      } else {
        failed ??= got.reason;
        keep(value, before, kind);
      }
    } else {
      requests += got.value.report.pages;
      lists.push(got.value.report);
      failed ??= got.value.broken;
      tally(value, before, kind, got.value, now);
    }
  }
  if (value.facts === undefined && before.facts !== undefined) value.facts = before.facts;
  requests += learned.length;
  learn(value, learned);
  // Snapshots a pass that ended this tick listed first: the rest of the tick's detail reads.
  const left = poll.storageDetailsPerTick - learned.length;
  const more = await readDetailsOf(ctx, value.facts, bounds, detailReads, left);
  requests += more.length;
  learn(value, more);
  if (value.facts !== undefined)
    value.summary = summarize(value.facts, clock.now(), poll.storageMaxNames);
  const reading = { value, requests, lists };
  if (failed !== undefined) throw new IncompleteReadError(failed, reading);
  // Neither list served (this tick or before): the platform has no storage to show.
  if (value.snapshots === undefined && value.volumes === undefined && unserved !== undefined)
    throw unserved;
  return reading;
}

/** A list whose read failed keeps its last count and the pass it was in. */
function keep(value: StorageInventory, before: StorageInventory, kind: StorageKind): void {
  const count = before[kind];
  if (count) value[kind] = count;
  const pass = before.passes?.[kind];
  if (pass) value.passes = { ...value.passes, [kind]: pass };
}

/** What one read of a list adds: a count (the last complete pass's, else so far) and its pass. */
function tally(
  value: StorageInventory,
  before: StorageInventory,
  kind: StorageKind,
  got: PassRead<StoredTally>,
  now: number,
): void {
  if (got.pass) value.passes = { ...value.passes, [kind]: got.pass };
  if (!got.complete) {
    const last = before[kind];
    value[kind] = last?.complete ? last : { count: got.acc.count, complete: false };
    return;
  }
  value[kind] = { count: got.acc.count, complete: true };
  if (kind === "snapshots") {
    const facts = factsOf(got.acc.records, before.facts, now);
    // The first complete read counts none as first seen: they were there before the exporter.
    if (before.facts !== undefined)
      for (const id of facts.keys()) if (!before.facts.has(id)) value.firstSeen++;
    value.facts = facts;
  }
}

/** The details of up to poll.storageDetailsPerTick snapshots (newest unknown first). */
function readDetailsOf(
  ctx: TickContext,
  facts: ReadonlyMap<string, SnapshotFact> | undefined,
  bounds: PageBounds,
  counts: DetailReadCounts,
  max = ctx.poll.storageDetailsPerTick,
): Promise<SnapshotFact[]> {
  if (facts === undefined || max <= 0) return Promise.resolve([]);
  const { reader, clock } = ctx;
  const wanted = detailsToRead(facts, max, clock.now());
  return readDetails(reader, wanted, bounds, () => clock.now(), counts);
}

/**
 * Puts what the detail reads learned into the facts, of snapshots still listed (a pass that ended
 * this tick may have dropped some).
 */
function learn(value: StorageInventory, learned: readonly SnapshotFact[]): void {
  const known = value.facts;
  if (known === undefined) return;
  const present = learned.filter((f) => known.has(f.id));
  if (present.length === 0) return;
  const facts = new Map(known);
  for (const f of present) facts.set(f.id, { ...f, names: known.get(f.id)?.names ?? f.names });
  value.facts = facts;
}
