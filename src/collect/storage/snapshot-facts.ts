// What the exporter knows of each snapshot: its names from the list, when it first listed it, and
// what GET /templates/{id} said of it (created, last spawned, spawn count). A snapshot never
// changes once made, but its use does: the details are read once, newest unknown first, and read
// again after SNAPSHOT_DETAILS_REFRESH_MS. Published facts are never changed: a tick that learns
// something makes a new map (map order is the list's: newest first).
import type { StoredRecord } from "./storage-lists.js";

/** A snapshot's details are asked again after this long (its last use may have moved). */
export const SNAPSHOT_DETAILS_REFRESH_MS = 3_600_000;

/** One snapshot as the exporter knows it. */
export interface SnapshotFact {
  /** The snapshotID as listed: `<template id>:<tag>` or `<team>/<name>:<tag>`. */
  readonly id: string;
  readonly names: readonly string[];
  /** Epoch ms this exporter first listed it (after a restart, the first list again). */
  readonly firstSeenAt: number;
  /** Epoch ms the platform says it was made; absent until read, or when the platform gives none. */
  readonly createdAt?: number;
  /** Epoch ms a sandbox was last started from it; null: never; absent: not read. */
  readonly lastSpawnedAt?: number | null;
  readonly spawnCount?: number;
  /** Epoch ms its details were last asked for, whatever came of it; absent: never asked. */
  readonly detailAt?: number;
  /** The platform serves no details for it (a 404: E2B reads GET /templates/{id} by raw id only). */
  readonly noDetail?: true;
}

/** The facts of a snapshot list just read whole: known snapshots keep theirs, new ones start. */
export function factsOf(
  records: readonly StoredRecord[],
  before: ReadonlyMap<string, SnapshotFact> | undefined,
  now: number,
): Map<string, SnapshotFact> {
  const out = new Map<string, SnapshotFact>();
  for (const r of records) {
    if (out.has(r.id)) continue;
    const had = before?.get(r.id);
    out.set(r.id, had ? withNames(had, r.names) : { id: r.id, names: r.names, firstSeenAt: now });
  }
  return out;
}

function withNames(f: SnapshotFact, names: readonly string[]): SnapshotFact {
  const same = f.names.length === names.length && f.names.every((n, i) => n === names[i]);
  return same ? f : { ...f, names };
}

/**
 * The snapshots whose details to ask for this tick, at most `max`: those never asked first (newest
 * first, the list's order), then those asked longest ago, once SNAPSHOT_DETAILS_REFRESH_MS passed.
 */
export function detailsToRead(
  facts: ReadonlyMap<string, SnapshotFact>,
  max: number,
  now: number,
): SnapshotFact[] {
  if (max <= 0) return [];
  const out: SnapshotFact[] = [];
  const stale: SnapshotFact[] = [];
  for (const f of facts.values()) {
    if (f.detailAt === undefined) {
      out.push(f);
      if (out.length >= max) return out;
    } else if (now - f.detailAt >= SNAPSHOT_DETAILS_REFRESH_MS) stale.push(f);
  }
  stale.sort((a, b) => (a.detailAt as number) - (b.detailAt as number));
  return out.concat(stale.slice(0, max - out.length));
}

/** The raw template id GET /templates/{id} and DELETE /templates/{id} take: the id, its tag cut. */
export function templateIdOf(snapshotId: string): string {
  const colon = snapshotId.lastIndexOf(":");
  return colon > snapshotId.lastIndexOf("/") && colon > 0 ? snapshotId.slice(0, colon) : snapshotId;
}

/** A name without its tag: `team/nightly:v2` -> `team/nightly`. */
export function untagged(name: string): string {
  return templateIdOf(name);
}

/** Epoch ms a snapshot's age counts from: the platform's created time, else when first listed. */
export function bornAt(f: SnapshotFact): number {
  return f.createdAt ?? f.firstSeenAt;
}

/** Age bands of the snapshot gauges: upper bounds in ms (the last band is open). */
export const AGE_BANDS = [
  { label: "lt_1d", below: 86_400_000 },
  { label: "1d_to_7d", below: 7 * 86_400_000 },
  { label: "7d_to_30d", below: 30 * 86_400_000 },
  { label: "ge_30d", below: Number.POSITIVE_INFINITY },
] as const;

/** What the storage families show of the snapshots, worked out at the read (on its clock). */
export interface SnapshotSummary {
  /** Snapshots by age band (AGE_BANDS order). */
  byAge: number[];
  /** Age of the oldest, seconds; absent without snapshots. */
  oldestAgeSeconds?: number;
  /** Snapshots whose details say never spawned from. */
  neverUsed: number;
  /** Snapshots whose creation time the platform did not give (yet): their age counts from first seen. */
  ageUnknown: number;
  /** Snapshots per name without tag, the most first, at most `maxNames`; the rest as `_other`. */
  byName: [string, number][];
}

/** The summary of `facts` at `now`. */
export function summarize(
  facts: ReadonlyMap<string, SnapshotFact>,
  now: number,
  maxNames: number,
): SnapshotSummary {
  const byAge = AGE_BANDS.map(() => 0);
  const names = new Map<string, number>();
  let oldest = Number.POSITIVE_INFINITY;
  let neverUsed = 0;
  let ageUnknown = 0;
  for (const f of facts.values()) {
    const born = bornAt(f);
    const age = Math.max(0, now - born);
    const band = AGE_BANDS.findIndex((b) => age < b.below);
    byAge[band] = (byAge[band] ?? 0) + 1;
    if (born < oldest) oldest = born;
    if (f.lastSpawnedAt === null) neverUsed++;
    if (f.createdAt === undefined) ageUnknown++;
    for (const n of new Set(f.names.map(untagged))) names.set(n, (names.get(n) ?? 0) + 1);
  }
  return {
    byAge,
    ...(facts.size > 0 ? { oldestAgeSeconds: Math.max(0, now - oldest) / 1000 } : {}),
    neverUsed,
    ageUnknown,
    byName: topNames(names, maxNames),
  };
}

function topNames(names: Map<string, number>, max: number): [string, number][] {
  const sorted = [...names].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  if (sorted.length <= max) return sorted;
  const other = sorted.slice(max).reduce((n, [, c]) => n + c, 0);
  return [...sorted.slice(0, max), ["_other", other]];
}
