// A snapshot's details: GET /templates/{id} serves a snapshot as it serves a template (E2B's
// TemplateWithBuilds: createdAt, lastSpawnedAt, spawnCount). E2B looks the id up raw (no tag, no
// name), so a named snapshot answers 404: it keeps no details, and its age counts from first seen.
// Reads are background asks of the request budget, a few at a time, within the tick's time limit.
import { PlatformNotFoundError } from "../../platform/http-errors.js";
import { parseSnapshotDetail } from "../../platform/normalize/snapshot-detail.js";
import type { PlatformReader } from "../collector.js";
import type { PageBounds } from "../paging.js";
import { type SnapshotFact, templateIdOf } from "./snapshot-facts.js";

/** Detail reads in flight at once. */
const DETAIL_CONCURRENCY = 4;
const ENDPOINT = "/templates/{id}";

/** What came of the detail reads so far (sandbox_storage_snapshot_detail_reads_total). */
export interface DetailReadCounts {
  ok: number;
  not_found: number;
  failed: number;
}

/**
 * Reads the details of `wanted` and returns the facts with what was learned (a new fact for each
 * snapshot asked; none changed in place). Stops asking at the tick's time limit.
 */
export async function readDetails(
  reader: PlatformReader,
  wanted: readonly SnapshotFact[],
  bounds: PageBounds,
  now: () => number,
  counts: DetailReadCounts,
): Promise<SnapshotFact[]> {
  const out: SnapshotFact[] = [];
  let next = 0;
  const worker = async () => {
    while (next < wanted.length) {
      if (bounds.timeLimit && now() >= bounds.timeLimit.at) return;
      if (bounds.signal?.aborted) return;
      const f = wanted[next++] as SnapshotFact;
      out.push(await readOne(reader, f, now, counts));
    }
  };
  await Promise.all(Array.from({ length: Math.min(DETAIL_CONCURRENCY, wanted.length) }, worker));
  return out;
}

async function readOne(
  reader: PlatformReader,
  f: SnapshotFact,
  now: () => number,
  counts: DetailReadCounts,
): Promise<SnapshotFact> {
  const path = `/templates/${encodeURIComponent(templateIdOf(f.id))}`;
  try {
    const reply = await reader.getJsonReply(ENDPOINT, path, undefined, parseSnapshotDetail, {
      background: true,
      notFoundExpected: true,
    });
    counts.ok++;
    return { id: f.id, names: f.names, firstSeenAt: f.firstSeenAt, ...reply.body, detailAt: now() };
  } catch (err) {
    if (err instanceof PlatformNotFoundError) {
      counts.not_found++;
      return { ...f, detailAt: now(), noDetail: true };
    }
    // A failed read (a bad body is counted by the client as bad_body) is asked again after the
    // refresh time; what was known before stays.
    counts.failed++;
    return { ...f, detailAt: now() };
  }
}
