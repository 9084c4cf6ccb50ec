// One poll cycle: every collector runs on its own; failures keep the last good data, marked stale.
import type { DeferredPage } from "../platform/normalize.js";
import type {
  ClusterOverview,
  Health,
  PlatformNode,
  Sandbox,
  Template,
} from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { mapLimit } from "../util/concurrency.js";
import { walkPages } from "./paging.js";
import { type SandboxList, SandboxTable } from "./sandbox-table.js";
import { COLLECTORS, type CollectorName, type CollectorStatus, type Snapshot } from "./snapshot.js";

/** Detail reads (/nodes/{id}, /templates/{id}) in flight at once. */
const DETAIL_CONCURRENCY = 8;

/** The read-only part of the control client that the poller needs. */
export interface PlatformReader {
  health(): Promise<Health>;
  clusterOverview(): Promise<ClusterOverview>;
  listNodes(): Promise<PlatformNode[]>;
  getNode(id: string): Promise<PlatformNode>;
  listTemplates(): Promise<Template[]>;
  getTemplate(id: string): Promise<Template>;
  listSandboxPage(
    q: { state?: string; metadata?: string; nextToken?: string; limit?: number },
    opts?: { slim?: boolean },
  ): Promise<DeferredPage<Sandbox>>;
}

/** What to walk and how. */
export interface PollerOptions {
  reader: PlatformReader;
  clock: Clock;
  pageLimit: number;
  maxPages: number;
  state?: string;
  metadata?: string;
  nodeDetails: boolean;
  templateDetails: boolean;
  /** Whether cluster-wide collectors run (only shard 0 exports them). */
  clusterWide: boolean;
  /** Read /health even when not cluster-wide (the policy engine acts only while it is up). */
  readHealth?: boolean;
  /**
   * Keep sandboxes as a compact table without metadata (see SandboxTable): for when neither
   * per-sandbox series nor the policy engine read them.
   */
  compactSandboxes?: boolean;
}

interface Outcome<T> {
  value?: T;
  ok: boolean;
  requests: number;
  startedAt: number;
  durationMs: number;
  error?: { code: string; message: string };
}

/** Turns the platform into a sequence of immutable snapshots. */
export class Poller {
  private last: Snapshot | undefined;
  private cycle = 0;

  constructor(private readonly options: PollerOptions) {}

  /** The latest completed snapshot, if any cycle has finished. */
  get latest(): Snapshot | undefined {
    return this.last;
  }

  /** Runs one full cycle and returns (and keeps) its snapshot. */
  async runCycle(): Promise<Snapshot> {
    const { clock, clusterWide } = this.options;
    const startedAt = clock.now();
    const [health, overview, nodes, templates, sandboxes] = await Promise.all([
      clusterWide || this.options.readHealth ? this.attempt(() => this.readHealth()) : undefined,
      clusterWide ? this.attempt(() => this.readOverview()) : undefined,
      clusterWide ? this.attempt(() => this.readNodes()) : undefined,
      clusterWide ? this.attempt(() => this.readTemplates()) : undefined,
      this.attempt(() => this.readSandboxes()),
    ]);
    const prev = this.last;
    const outcomes: Record<CollectorName, Outcome<unknown> | undefined> = {
      health,
      overview,
      nodes,
      templates,
      sandboxes,
    };
    const collectors = {} as Record<CollectorName, CollectorStatus>;
    for (const name of COLLECTORS) {
      collectors[name] = this.status(name, outcomes[name], prev?.collectors[name], startedAt);
    }
    const snapshot: Snapshot = {
      cycle: ++this.cycle,
      startedAt,
      finishedAt: clock.now(),
      health: health?.ok ? health.value : prev?.health,
      overview: overview?.ok ? overview.value : prev?.overview,
      nodes: nodes?.ok ? nodes.value : prev?.nodes,
      templates: templates?.ok ? templates.value : prev?.templates,
      sandboxes: sandboxes.ok ? sandboxes.value : prev?.sandboxes,
      sandboxesComplete: sandboxes.ok,
      collectors,
    };
    this.last = snapshot;
    return snapshot;
  }

  private status(
    name: CollectorName,
    outcome: Outcome<unknown> | undefined,
    prev: CollectorStatus | undefined,
    cycleStart: number,
  ): CollectorStatus {
    if (!outcome) {
      return {
        name,
        success: false,
        stale: false,
        skipped: true,
        lastAttemptAt: cycleStart,
        durationMs: 0,
        requests: 0,
      };
    }
    const lastSuccessAt = outcome.ok ? outcome.startedAt : prev?.lastSuccessAt;
    return {
      name,
      success: outcome.ok,
      stale: !outcome.ok,
      lastAttemptAt: outcome.startedAt,
      ...(lastSuccessAt !== undefined ? { lastSuccessAt } : {}),
      durationMs: outcome.durationMs,
      requests: outcome.requests,
      ...(outcome.error ? { error: outcome.error } : {}),
    };
  }

  private async attempt<T>(
    read: () => Promise<{ value: T; requests: number }>,
  ): Promise<Outcome<T>> {
    const startedAt = this.options.clock.now();
    try {
      const { value, requests } = await read();
      return {
        value,
        ok: true,
        requests,
        startedAt,
        durationMs: this.options.clock.now() - startedAt,
      };
    } catch (err) {
      return {
        ok: false,
        requests: 0,
        startedAt,
        durationMs: this.options.clock.now() - startedAt,
        error: describeError(err),
      };
    }
  }

  private async readHealth(): Promise<{ value: Health; requests: number }> {
    return { value: await this.options.reader.health(), requests: 1 };
  }

  private async readOverview(): Promise<{ value: ClusterOverview; requests: number }> {
    return { value: await this.options.reader.clusterOverview(), requests: 1 };
  }

  private readNodes(): Promise<{ value: PlatformNode[]; requests: number }> {
    const { reader, nodeDetails } = this.options;
    return withDetails(
      () => reader.listNodes(),
      (id) => reader.getNode(id),
      nodeDetails,
    );
  }

  private readTemplates(): Promise<{ value: Template[]; requests: number }> {
    const { reader, templateDetails } = this.options;
    return withDetails(
      () => reader.listTemplates(),
      (id) => reader.getTemplate(id),
      templateDetails,
    );
  }

  private async readSandboxes(): Promise<{ value: SandboxList; requests: number }> {
    const { reader, pageLimit, maxPages, state, metadata } = this.options;
    const slim = this.options.compactSandboxes === true;
    const fetchPage = (nextToken: string | undefined) =>
      reader.listSandboxPage(
        {
          limit: pageLimit,
          ...(state ? { state } : {}),
          ...(metadata ? { metadata } : {}),
          ...(nextToken !== undefined ? { nextToken } : {}),
        },
        { slim },
      );
    if (slim) {
      // Fleets change little between two cycles: sized for, and sharing ids with, the last walk.
      const table = SandboxTable.builder(this.last?.sandboxes);
      const walk = await walkPages(fetchPage, maxPages, (s) => table.push(s));
      return { value: table.build(), requests: walk.pages };
    }
    const walk = await walkPages(fetchPage, maxPages);
    return { value: dedupeById(walk.items), requests: walk.pages };
  }
}

/** Reads a list and, when asked, each item's detail record merged over its summary. */
async function withDetails<T extends Detailed>(
  list: () => Promise<T[]>,
  detail: (id: string) => Promise<T>,
  enabled: boolean,
): Promise<{ value: T[]; requests: number }> {
  const items = await list();
  if (!enabled) return { value: items, requests: 1 };
  const value = await mapLimit(items, DETAIL_CONCURRENCY, async (item) =>
    mergeDetail(item, await detail(item.id)),
  );
  return { value, requests: 1 + items.length };
}

type Detailed = { id: string; numeric: Record<string, number>; info: Record<string, string> };

/** Detail records win over list summaries, field by field. */
function mergeDetail<T extends Detailed>(summary: T, detail: T): T {
  return {
    ...summary,
    ...detail,
    numeric: { ...summary.numeric, ...detail.numeric },
    info: { ...summary.info, ...detail.info },
  };
}

/** A sandbox listed twice (it moved while we paged) is kept once, at its latest position. */
function dedupeById(items: Sandbox[]): Sandbox[] {
  const byId = new Map<string, Sandbox>();
  for (const s of items) byId.set(s.id, s);
  return byId.size === items.length ? items : [...byId.values()];
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
