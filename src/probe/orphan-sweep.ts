// Finds probe sandboxes an earlier run left behind (crash, SIGKILL, failed delete) and deletes them.

import { readPages } from "../collect/paging.js";
import { PlatformNotFoundError } from "../platform/http-errors.js";
import type { Sandbox } from "../platform/types.js";
import { PROBE_TAG_KEY } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { errorMessage } from "../util/errors.js";
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
  /** The deleted sandboxes as listed (their module tag and template attribute the count). */
  deletedSandboxes: Sandbox[];
  failed: Array<{ id: string; error: string }>;
  /** The list stopped short of its end (its page limit, a loop): the rest waits for the next sweep. */
  truncated?: { code: string; message: string };
}

/** Metadata key naming the probe module that created a probe sandbox. */
export const PROBE_MODULE_KEY = "sandbox-exporter/probe-module";

/** The metadata of this instance's probe sandboxes (and of its module, when given). */
export function probeTag(instance: string, module?: string): Record<string, string> {
  return { [PROBE_TAG_KEY]: instance, ...(module !== undefined && { [PROBE_MODULE_KEY]: module }) };
}

/**
 * Lists this instance's probe sandboxes (metadata filter, E2B style `k=v` URL-encoded) and deletes
 * those older than `minAgeMs`. The tag is checked again here, since a platform that ignored the
 * filter must never make us delete a user's sandbox.
 */
export async function sweepOrphans(control: ProbeControl, o: SweepOptions): Promise<SweepResult> {
  const metadata = new URLSearchParams(probeTag(o.instance)).toString();
  const orphans: Sandbox[] = [];
  // The one paged reader: a page limit, loop detection, and a result that says where it stopped.
  const read = await readPages(
    async (nextToken) => {
      const query = { metadata, limit: PAGE_LIMIT, ...(nextToken ? { nextToken } : {}) };
      const got = await abortable(control.listSandboxes(query), o.signal);
      return {
        size: got.items.length,
        items: () => got.items,
        ...(got.nextToken ? { nextToken: got.nextToken } : {}),
      };
    },
    { maxPages: o.maxPages ?? MAX_PAGES },
    (s) => {
      if (isOrphan(s, o)) orphans.push(s);
    },
  );
  const result: SweepResult = { deleted: [], deletedSandboxes: [], failed: [] };
  if (read.stopped) result.truncated = { code: read.stopped.code, message: read.stopped.message };
  for (const s of orphans) {
    try {
      await abortable(control.deleteSandbox(s.id), o.signal);
      result.deleted.push(s.id);
      result.deletedSandboxes.push(s);
    } catch (err) {
      if (err instanceof PlatformNotFoundError) continue;
      if (o.signal.aborted) throw err;
      result.failed.push({ id: s.id, error: errorMessage(err) });
    }
  }
  return result;
}

function isOrphan(s: Sandbox, o: SweepOptions): boolean {
  if (s.metadata[PROBE_TAG_KEY] !== o.instance) return false;
  // Without a start time the age is unknown: leave it to the sandbox's own time to live.
  return s.startedAt !== undefined && o.now - s.startedAt > o.minAgeMs;
}

/** The sweep's /status section. */
export interface SweepStatus {
  time: string;
  deleted: number;
  error: string | null;
  /** The list stopped short of its end: why (the rest waits for the next sweep). */
  truncated?: { code: string; message: string };
}

/** What the sweeper needs. */
export interface SweeperOptions {
  control: ProbeControl;
  instance: string;
  /** Only sandboxes older than this are orphans: the longest total timeout of any module. */
  minAgeMs: number;
  clock: Clock;
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Counts each deleted sandbox (by its module tag and template). */
  onDeleted?: (sandbox: Sandbox) => void;
}

/**
 * One sweep at a time for every module of an instance (they share the tag): a caller that asks
 * while one runs gets that one's count. stop() aborts the sweep in flight.
 */
export class OrphanSweeper {
  private running: Promise<number> | undefined;
  private readonly abort = new AbortController();
  private total = 0;
  private last: SweepStatus | null = null;

  constructor(private readonly o: SweeperOptions) {}

  /** Sweeps now (or joins the sweep in flight); the number deleted. Never throws. */
  sweep(): Promise<number> {
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  stop(): void {
    this.abort.abort();
  }

  /** Sandboxes deleted so far, and the last sweep. */
  status(): { orphansDeleted: number; lastSweep: SweepStatus | null } {
    return { orphansDeleted: this.total, lastSweep: this.last };
  }

  private async run(): Promise<number> {
    const { o } = this;
    const now = o.clock.now();
    const time = new Date(now).toISOString();
    if (this.abort.signal.aborted) return 0;
    try {
      const r = await sweepOrphans(o.control, {
        instance: o.instance,
        minAgeMs: o.minAgeMs,
        now,
        signal: this.abort.signal,
      });
      this.total += r.deleted.length;
      for (const s of r.deletedSandboxes) o.onDeleted?.(s);
      const error = r.failed.length
        ? `${r.failed.length} deletes failed: ${r.failed[0]?.error}`
        : null;
      this.last = {
        time,
        deleted: r.deleted.length,
        error,
        ...(r.truncated ? { truncated: r.truncated } : {}),
      };
      if (r.deleted.length || error)
        o.logger?.info({ deleted: r.deleted, failed: r.failed }, "probe orphan sweep");
      if (r.truncated)
        o.logger?.warn({ truncated: r.truncated }, "probe orphan sweep: list read in part");
      return r.deleted.length;
    } catch (err) {
      this.last = { time, deleted: 0, error: errorMessage(err) };
      o.logger?.warn({ err }, "probe orphan sweep failed");
      return 0;
    }
  }
}
