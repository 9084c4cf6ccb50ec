// E2B's sandbox lifecycle events: a bounded log fed by the state's lifecycle changes, served as
// GET /events/sandboxes and /events/sandboxes/{sandboxID} the way E2B's API pages them.
import { LIFECYCLE_EVENT_TYPES } from "../platform/events.js";
import type { Clock } from "../util/clock.js";
import type { ApiHandler } from "./context.js";
import { uuid } from "./generate.js";
import { sendError, sendJson } from "./http-io.js";
import { deriveSeed, Prng } from "./prng.js";
import type { RouteDef } from "./router.js";
import type { SimLifecycleEvent, SimLifecycleType, SimState } from "./state.js";

/** E2B keeps a team's events 7 days by default (shared/pkg/events DefaultEventsTTLDays). */
export const EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Events kept at most, whatever their age: the log's memory bound. */
export const MAX_EVENTS = 100_000;
/** The team id of every simulated sandbox unless `teamId` is set. */
export const DEFAULT_TEAM_ID = "460355b3-4f64-48f9-9a16-4442817f79f5";
/** What the orchestrator writes today (shared/pkg/events StructureVersionV2). */
const EVENT_VERSION = "v2";
const TYPE_PREFIX = "sandbox.lifecycle.";
/** E2B's deprecated category/label pair of each type (shared/pkg/events/migration.go). */
const LEGACY_LABELS: Readonly<Record<SimLifecycleType, string>> = {
  created: "create",
  killed: "kill",
  paused: "pause",
  resumed: "resume",
  updated: "update",
  checkpointed: "",
};
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;

/** One event as the events API answers it (camelCase, `eventData` an object). */
export interface SimEvent {
  version: string;
  id: string;
  type: string;
  eventData: Record<string, unknown>;
  sandboxBuildId: string;
  sandboxExecutionId: string;
  sandboxId: string;
  sandboxTeamId: string;
  sandboxTemplateId: string;
  timestamp: string;
}

/** The same event as the orchestrator marshals it (shared/pkg/events.SandboxEvent, snake_case). */
export function snakeCaseEvent(e: SimEvent): Record<string, unknown> {
  const short = e.type.slice(TYPE_PREFIX.length) as SimLifecycleType;
  return {
    id: e.id,
    version: e.version,
    type: e.type,
    timestamp: e.timestamp,
    event_category: "lifecycle",
    event_label: LEGACY_LABELS[short] ?? "",
    event_data: e.eventData,
    sandbox_id: e.sandboxId,
    sandbox_execution_id: e.sandboxExecutionId,
    sandbox_template_id: e.sandboxTemplateId,
    sandbox_build_id: e.sandboxBuildId,
    sandbox_team_id: e.sandboxTeamId,
  };
}

/** Go's time.RFC3339Nano in UTC: fraction digits without trailing zeros, none when whole. */
export function rfc3339(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.replace(/\.(\d*?)0*Z$/, (_m, frac: string) => (frac ? `.${frac}Z` : "Z"));
}

/** Go's time.RFC3339 in UTC (whole seconds), as E2B writes `started_at` and `set_timeout`. */
function rfc3339Seconds(ms: number): string {
  return rfc3339(Math.floor(ms / 1000) * 1000);
}

/** The VM run a sandbox is in: a new one at every create and resume. */
interface Execution {
  id: string;
  startedAt: number;
  buildId: string;
}

interface Entry {
  at: number;
  event: SimEvent;
}

export interface SimEventLogOptions {
  state: SimState;
  clock: Clock;
  seed: number;
  teamId: string;
  retentionMs?: number;
  maxEvents?: number;
}

/** The query of one events page. */
export interface EventQuery {
  sandboxId?: string;
  offset: number;
  limit: number;
  orderAsc: boolean;
  /** Full type names; empty: every type. */
  types: ReadonlySet<string>;
}

/** Every lifecycle event of the simulated team, oldest first, pruned by age and count. */
export class SimEventLog {
  readonly teamId: string;
  private readonly clock: Clock;
  private readonly state: SimState;
  private readonly rng: Prng;
  private readonly retentionMs: number;
  private readonly maxEvents: number;
  private entries: Entry[] = [];
  /** Index of the oldest live entry; the array is compacted once half of it is dead. */
  private head = 0;
  private readonly executions = new Map<string, Execution>();
  private readonly listeners: Array<(e: SimEvent) => void> = [];

  constructor(options: SimEventLogOptions) {
    this.teamId = options.teamId;
    this.clock = options.clock;
    this.state = options.state;
    this.rng = new Prng(deriveSeed(options.seed, "events"));
    this.retentionMs = options.retentionMs ?? EVENT_RETENTION_MS;
    this.maxEvents = options.maxEvents ?? MAX_EVENTS;
    options.state.onLifecycle((e) => this.record(e));
  }

  /** Calls `fn` with every event recorded from now on (webhook delivery, team metrics). */
  onEvent(fn: (e: SimEvent) => void): void {
    this.listeners.push(fn);
  }

  /** Events kept now, oldest first (do not mutate). */
  all(): SimEvent[] {
    this.prune();
    return this.entries.slice(this.head).map((x) => x.event);
  }

  /** One page, as E2B answers it: filtered, ordered by time, then `offset` skipped. */
  page(q: EventQuery): SimEvent[] {
    this.prune();
    const matching: SimEvent[] = [];
    for (let i = this.head; i < this.entries.length; i++) {
      const { event } = this.entries[i] as Entry;
      if (q.sandboxId !== undefined && event.sandboxId !== q.sandboxId) continue;
      if (q.types.size > 0 && !q.types.has(event.type)) continue;
      matching.push(event);
    }
    if (!q.orderAsc) matching.reverse();
    return matching.slice(q.offset, q.offset + q.limit);
  }

  /** The build a sandbox of `templateID` runs: the template's, or its snapshot template's newest. */
  private buildOf(templateID: string): string {
    const template = this.state.template(templateID);
    if (template) return template.buildID;
    const snap = this.state.snapshots.get(templateID);
    return snap?.builds[snap.builds.length - 1]?.buildID ?? "";
  }

  private record(e: SimLifecycleEvent): void {
    const s = e.sandbox;
    let exec = this.executions.get(s.sandboxID);
    if (!exec || e.type === "created" || e.type === "resumed") {
      exec = {
        id: uuid(this.rng),
        // A sandbox of the generated fleet has run since its startedAt, before any event.
        startedAt: exec || e.type === "resumed" ? e.at : Math.min(s.startedAt, e.at),
        buildId: this.buildOf(s.templateID),
      };
      this.executions.set(s.sandboxID, exec);
    }
    const data: Record<string, unknown> = {};
    if (Object.keys(s.metadata).length > 0) data.sandbox_metadata = { ...s.metadata };
    if (e.type === "killed" || e.type === "paused") {
      data.execution = {
        started_at: rfc3339Seconds(exec.startedAt),
        vcpu_count: s.cpuCount,
        memory_mb: s.memoryMB,
        execution_time: Math.max(0, e.at - exec.startedAt),
      };
    }
    if (e.type === "killed") {
      data.kill_reason = e.killReason || "unknown";
      this.executions.delete(s.sandboxID);
    }
    if (e.type === "updated") data.set_timeout = rfc3339Seconds(s.endAt);
    const event: SimEvent = {
      version: EVENT_VERSION,
      id: uuid(this.rng),
      type: `${TYPE_PREFIX}${e.type}`,
      eventData: data,
      sandboxBuildId: exec.buildId,
      sandboxExecutionId: exec.id,
      sandboxId: s.sandboxID,
      sandboxTeamId: this.teamId,
      sandboxTemplateId: s.templateID,
      timestamp: rfc3339(e.at),
    };
    this.entries.push({ at: e.at, event });
    this.prune();
    for (const fn of this.listeners) fn(event);
  }

  private prune(): void {
    const oldest = this.clock.now() - this.retentionMs;
    while (this.head < this.entries.length) {
      const first = this.entries[this.head] as Entry;
      if (first.at >= oldest && this.entries.length - this.head <= this.maxEvents) break;
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}

/** Parses the events query as E2B's OpenAPI validator does; a string is the 400 message. */
export function parseEventQuery(url: URL, sandboxId?: string): EventQuery | string {
  const p = url.searchParams;
  const offset = intParam(p, "offset", 0, 0, Number.MAX_SAFE_INTEGER);
  if (typeof offset === "string") return offset;
  const limit = intParam(p, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT);
  if (typeof limit === "string") return limit;
  const asc = p.get("orderAsc");
  if (asc !== null && asc !== "true" && asc !== "false")
    return `parameter "orderAsc" in query has an error: value ${asc}: an invalid boolean`;
  const types = new Set<string>();
  for (const t of p.getAll("types")) {
    if (!LIFECYCLE_EVENT_TYPES.some((x) => `${TYPE_PREFIX}${x}` === t))
      return `parameter "types" in query has an error: value is not one of the allowed values: ${t}`;
    types.add(t);
  }
  return {
    ...(sandboxId !== undefined && { sandboxId }),
    offset,
    limit,
    orderAsc: asc === "true",
    types,
  };
}

function intParam(
  p: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number | string {
  const raw = p.get(name);
  if (raw === null) return fallback;
  const n = Number(raw);
  const where = `parameter "${name}" in query has an error`;
  if (raw.trim() === "" || !Number.isInteger(n))
    return `${where}: value ${raw}: an invalid integer`;
  if (n < min) return `${where}: number must be at least ${min}`;
  if (n > max) return `${where}: number must be at most ${max}`;
  return n;
}

const teamEvents: ApiHandler = (ctx, _req, res, _params, url) => {
  const q = parseEventQuery(url);
  if (typeof q === "string") return sendError(res, 400, q);
  sendJson(res, 200, ctx.events.page(q));
};

/** A sandbox's events outlive it: an id without events answers an empty list, not 404. */
const sandboxEvents: ApiHandler = (ctx, _req, res, [id], url) => {
  const q = parseEventQuery(url, id ?? "");
  if (typeof q === "string") return sendError(res, 400, q);
  sendJson(res, 200, ctx.events.page(q));
};

/** E2B's lifecycle events API. */
export const eventRoutes: RouteDef<ApiHandler>[] = [
  { method: "GET", template: "/events/sandboxes", handler: teamEvents },
  { method: "GET", template: "/events/sandboxes/{sandboxID}", handler: sandboxEvents },
];
