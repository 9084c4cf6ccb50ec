// E2B's team metrics (GET /teams/{teamID}/metrics and /metrics/max), computed from what the
// simulated fleet did: running sandboxes over time and sandbox starts.
import type { ApiHandler } from "./context.js";
import { rfc3339, type SimEvent } from "./events.js";
import { sendError, sendJson } from "./http-io.js";
import type { RouteDef } from "./router.js";
import type { SimState } from "./state.js";

/** E2B answers the last 7 days when start or end is left out. */
const DEFAULT_RANGE_S = 7 * 24 * 3600;
/** E2B's team gauge export period; /metrics/max buckets starts by it (api/internal/metrics ExportPeriod). */
const EXPORT_PERIOD_S = 5;
/** Change points and starts kept at most: the history's memory bound. */
const MAX_POINTS = 200_000;
const RETENTION_MS = DEFAULT_RANGE_S * 1000;

/** clickhouse utils.CalculateStep: fewer than 1,000 points whatever the range. */
export function metricsStep(rangeS: number): number {
  if (rangeS < 3600) return 5;
  if (rangeS < 6 * 3600) return 30;
  if (rangeS < 12 * 3600) return 60;
  if (rangeS < 24 * 3600) return 120;
  if (rangeS < 7 * 24 * 3600) return 300;
  return 900;
}

/** Running sandboxes after each change, and every start, as E2B's team gauges record them. */
export class TeamHistory {
  /** Since when the history knows the fleet (epoch ms). */
  readonly origin: number;
  private readonly running = new Set<string>();
  /** [at ms, running count after the change], oldest first. */
  private changes: Array<[number, number]> = [];
  private starts: number[] = [];
  private readonly now: () => number;

  constructor(state: SimState, now: () => number) {
    this.now = now;
    this.origin = now();
    for (const s of state.sandboxes.values())
      if (s.state === "running") this.running.add(s.sandboxID);
    this.changes.push([this.origin, this.running.size]);
  }

  /** Running sandboxes now (what E2B's concurrency limit counts). */
  runningCount(): number {
    return this.running.size;
  }

  /** Feeds one lifecycle event. */
  record(e: SimEvent, at: number): void {
    const before = this.running.size;
    switch (e.type) {
      case "sandbox.lifecycle.created":
        this.starts.push(at);
        this.running.add(e.sandboxId);
        break;
      case "sandbox.lifecycle.resumed":
        this.running.add(e.sandboxId);
        break;
      case "sandbox.lifecycle.paused":
      case "sandbox.lifecycle.killed":
        this.running.delete(e.sandboxId);
        break;
    }
    if (this.running.size !== before) this.changes.push([at, this.running.size]);
    this.prune();
  }

  /** The running count at `fromMs`, then every change up to `toMs`, in order. */
  concurrentIn(fromMs: number, toMs: number): Array<[number, number]> {
    // The last change at or before fromMs sets the value the range starts with.
    const i = firstAfter(this.changes, fromMs, (c) => c[0]);
    const out: Array<[number, number]> = [[fromMs, this.changes[i - 1]?.[1] ?? 0]];
    for (let j = i; j < this.changes.length; j++) {
      const c = this.changes[j] as [number, number];
      if (c[0] > toMs) break;
      out.push(c);
    }
    return out;
  }

  /** Start times within [fromMs, toMs), oldest first. */
  startsIn(fromMs: number, toMs: number): number[] {
    const out: number[] = [];
    for (let j = firstAfter(this.starts, fromMs - 1, (t) => t); j < this.starts.length; j++) {
      const t = this.starts[j] as number;
      if (t >= toMs) break;
      out.push(t);
    }
    return out;
  }

  private prune(): void {
    const oldest = this.now() - RETENTION_MS;
    let drop = 0;
    while (drop < this.changes.length - 1) {
      const next = this.changes[drop + 1] as [number, number];
      if (next[0] > oldest && this.changes.length - drop <= MAX_POINTS) break;
      drop++;
    }
    if (drop > 0) this.changes = this.changes.slice(drop);
    let s = 0;
    while (
      s < this.starts.length &&
      ((this.starts[s] as number) < oldest || this.starts.length - s > MAX_POINTS)
    )
      s++;
    if (s > 0) this.starts = this.starts.slice(s);
  }
}

/** Index of the first item whose key is greater than `at` (items sorted by key). */
function firstAfter<T>(items: readonly T[], at: number, key: (item: T) => number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key(items[mid] as T) <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The start and end (seconds) a team metrics request asks for, or the 400 message. */
function range(url: URL, nowMs: number): [number, number] | string {
  const nowS = Math.floor(nowMs / 1000);
  const read = (name: string, fallback: number): number | string => {
    const raw = url.searchParams.get(name);
    if (raw === null) return fallback;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isInteger(n))
      return `parameter "${name}" in query has an error: value ${raw}: an invalid integer`;
    if (n < 0) return `parameter "${name}" in query has an error: number must be at least 0`;
    return n;
  };
  const start = read("start", nowS - DEFAULT_RANGE_S);
  if (typeof start === "string") return start;
  const end = read("end", nowS);
  if (typeof end === "string") return end;
  if (start > end) return "start time cannot be after end time";
  return [start, end];
}

/** E2B answers 403 for any team but the API key's. */
function otherTeam(teamId: string, asked: string | undefined): string | undefined {
  if (asked === teamId) return undefined;
  return `You (${teamId}) are not authorized to access this team's (${asked}) metrics`;
}

function maxOver(points: Array<[number, number]>): [number, number] {
  let best: [number, number] = points[0] ?? [0, 0];
  for (const p of points) if (p[1] > best[1]) best = p;
  return best;
}

const teamMetrics: ApiHandler = (ctx, _req, res, [teamID], url) => {
  const forbidden = otherTeam(ctx.team.teamId, teamID);
  if (forbidden) return sendError(res, 403, forbidden);
  const now = ctx.clock.now();
  const r = range(url, now);
  if (typeof r === "string") return sendError(res, 400, r);
  if (ctx.team.emptyMetrics) return sendJson(res, 200, []);
  const [start, end] = r;
  const step = metricsStep(end - start);
  const history = ctx.team.history;
  const out: unknown[] = [];
  const firstBucket = Math.floor(start / step) * step;
  for (let b = firstBucket; b <= end; b += step) {
    const from = Math.max(b, start) * 1000;
    const to = Math.min((b + step) * 1000, end * 1000 + 999, now);
    // Only what the gauges could have recorded: after the simulator started, not in the future.
    if (to < history.origin || from > now) continue;
    const lo = Math.max(from, history.origin);
    const concurrent = maxOver(history.concurrentIn(lo, to))[1];
    const started = history.startsIn(from, Math.min((b + step) * 1000, end * 1000 + 1000)).length;
    out.push({
      timestamp: rfc3339(b * 1000),
      timestampUnix: b,
      concurrentSandboxes: concurrent,
      sandboxStartRate: started / step,
    });
  }
  sendJson(res, 200, out);
};

const teamMetricsMax: ApiHandler = (ctx, _req, res, [teamID], url) => {
  const forbidden = otherTeam(ctx.team.teamId, teamID);
  if (forbidden) return sendError(res, 403, forbidden);
  const now = ctx.clock.now();
  const r = range(url, now);
  if (typeof r === "string") return sendError(res, 400, r);
  const metric = url.searchParams.get("metric");
  if (metric !== "concurrent_sandboxes" && metric !== "sandbox_start_rate")
    return sendError(res, 400, `invalid metric: ${metric ?? ""}`);
  const [start, end] = r;
  const history = ctx.team.history;
  const from = Math.max(start * 1000, history.origin);
  const to = Math.min(end * 1000 + 999, now);
  // E2B: no data answers 0, stamped now.
  let best: [number, number] = [now, 0];
  if (!ctx.team.emptyMetrics && from <= to) {
    if (metric === "concurrent_sandboxes") {
      best = maxOver(history.concurrentIn(from, to));
    } else {
      const buckets = new Map<number, number>();
      for (const t of history.startsIn(start * 1000, end * 1000 + 1000)) {
        const b = Math.floor(t / 1000 / EXPORT_PERIOD_S) * EXPORT_PERIOD_S;
        buckets.set(b, (buckets.get(b) ?? 0) + 1);
      }
      for (const [b, n] of buckets)
        if (n / EXPORT_PERIOD_S > best[1]) best = [b * 1000, n / EXPORT_PERIOD_S];
    }
  }
  const ts = Math.floor(best[0] / 1000);
  sendJson(res, 200, { timestamp: rfc3339(ts * 1000), timestampUnix: ts, value: best[1] });
};

/** E2B's team metrics routes. */
export const teamRoutes: RouteDef<ApiHandler>[] = [
  { method: "GET", template: "/teams/{teamID}/metrics", handler: teamMetrics },
  { method: "GET", template: "/teams/{teamID}/metrics/max", handler: teamMetricsMax },
];
