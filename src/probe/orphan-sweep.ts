// Finds probe sandboxes an earlier run left behind (crash, SIGKILL, failed delete) and deletes them.

import { PlatformNotFoundError } from "../platform/http-errors.js";
import type { Sandbox } from "../platform/types.js";
import { PROBE_TAG_KEY } from "../platform/types.js";
import { abortable } from "./abortable.js";
import type { ProbeControl } from "./phase.js";

const PAGE_LIMIT = 100;
const MAX_PAGES = 50;

/** What to sweep. */
export interface SweepOptions {
  instance: string;
  /** Only sandboxes older than this are orphans; younger ones may belong to a probe in flight. */
  minAgeMs: number;
  /** Wall-clock epoch ms. */
  now: number;
  signal: AbortSignal;
  maxPages?: number;
}

/** What one sweep did. */
export interface SweepResult {
  deleted: string[];
  failed: Array<{ id: string; error: string }>;
}

/** The metadata of this instance's probe sandboxes. */
export function probeTag(instance: string): Record<string, string> {
  return { [PROBE_TAG_KEY]: instance };
}

/**
 * Lists this instance's probe sandboxes (metadata filter, E2B style `k=v` URL-encoded) and deletes
 * those older than `minAgeMs`. The tag is checked again here, since a platform that ignored the
 * filter must never make us delete a user's sandbox.
 */
export async function sweepOrphans(control: ProbeControl, o: SweepOptions): Promise<SweepResult> {
  const metadata = new URLSearchParams(probeTag(o.instance)).toString();
  const orphans: Sandbox[] = [];
  const seen = new Set<string>();
  let nextToken: string | undefined;
  for (let page = 0; page < (o.maxPages ?? MAX_PAGES); page++) {
    const query = { metadata, limit: PAGE_LIMIT, ...(nextToken ? { nextToken } : {}) };
    const got = await abortable(control.listSandboxes(query), o.signal);
    for (const s of got.items) if (isOrphan(s, o)) orphans.push(s);
    // A repeated token would walk forever.
    if (got.nextToken === undefined || seen.has(got.nextToken)) break;
    seen.add(got.nextToken);
    nextToken = got.nextToken;
  }
  const result: SweepResult = { deleted: [], failed: [] };
  for (const s of orphans) {
    try {
      await abortable(control.deleteSandbox(s.id), o.signal);
      result.deleted.push(s.id);
    } catch (err) {
      if (err instanceof PlatformNotFoundError) continue;
      if (o.signal.aborted) throw err;
      result.failed.push({ id: s.id, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return result;
}

function isOrphan(s: Sandbox, o: SweepOptions): boolean {
  if (s.metadata[PROBE_TAG_KEY] !== o.instance) return false;
  // Without a start time the age is unknown: leave it to the sandbox's own time to live.
  return s.startedAt !== undefined && o.now - s.startedAt > o.minAgeMs;
}
