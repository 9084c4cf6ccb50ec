// What each simulated sandbox really ran and sat paused, from its own lifecycle (creates, kills,
// pauses, resumes, expiries), to the ms: the truth a test compares the exporter's spend with.
// Served at GET /_sim/cost (test-only; no real platform has it).
import type { ServerResponse } from "node:http";
import type { SimLifecycleEvent, SimState } from "./state.js";

/** The test-only route of the truth. */
export const COST_TRUTH_PATH = "/_sim/cost";
/** How long (simulator clock) the spans of a killed sandbox are kept: the demo runs for days. */
export const TRUTH_HORIZON_MS = 3_600_000;

/** One span of one sandbox in one state; `to` undefined while it lasts. */
export interface TruthSpan {
  state: "running" | "paused";
  from: number;
  to: number | undefined;
  template: string;
  cpu: number;
  memoryMB: number;
}

/** Resource-seconds of one template in one state over a window. */
export interface TruthTotal {
  template: string;
  state: "running" | "paused";
  seconds: number;
  vcpuSeconds: number;
  gibSeconds: number;
}

/**
 * Spans of every sandbox the lifecycle observers saw; a killed one's are dropped `horizonMs` after
 * its kill, so windows of the truth are exact only when they end within that of now.
 */
export class CostTruth {
  private readonly spansById = new Map<string, TruthSpan[]>();
  /** Kills, oldest first, from `head` on: the sandboxes to forget once past the horizon. */
  private kills: { id: string; at: number }[] = [];
  private head = 0;

  constructor(
    private readonly state: SimState,
    private readonly horizonMs = TRUTH_HORIZON_MS,
  ) {
    state.onLifecycle((e) => this.record(e));
  }

  /** The spans of one sandbox, oldest first (do not mutate). */
  spans(id: string): readonly TruthSpan[] {
    return this.spansById.get(id) ?? [];
  }

  /** Every sandbox with spans. */
  ids(): Iterable<string> {
    return this.spansById.keys();
  }

  /**
   * Resource-seconds by template and state within [since, until]. A sandbox of the generated
   * fleet no event touched counts from its startedAt in its current state.
   */
  totals(since: number, until: number): TruthTotal[] {
    const out = new Map<string, TruthTotal>();
    const add = (span: TruthSpan): void => {
      const ms = Math.min(span.to ?? until, until) - Math.max(span.from, since);
      if (ms <= 0) return;
      const key = `${span.template}\0${span.state}`;
      let t = out.get(key);
      if (!t) {
        t = {
          template: span.template,
          state: span.state,
          seconds: 0,
          vcpuSeconds: 0,
          gibSeconds: 0,
        };
        out.set(key, t);
      }
      t.seconds += ms / 1000;
      t.vcpuSeconds += (span.cpu * ms) / 1000;
      t.gibSeconds += (span.memoryMB / 1024) * (ms / 1000);
    };
    for (const spans of this.spansById.values()) for (const s of spans) add(s);
    for (const s of this.state.sandboxes.values()) {
      if (this.spansById.has(s.sandboxID)) continue;
      if (s.state !== "running" && s.state !== "paused") continue;
      add({
        state: s.state,
        from: s.startedAt,
        to: undefined,
        template: s.templateID,
        cpu: s.cpuCount,
        memoryMB: s.memoryMB,
      });
    }
    return [...out.values()].sort((a, b) =>
      a.template === b.template ? cmp(a.state, b.state) : cmp(a.template, b.template),
    );
  }

  private record(e: SimLifecycleEvent): void {
    const s = e.sandbox;
    let spans = this.spansById.get(s.sandboxID);
    if (!spans) {
      spans = [];
      this.spansById.set(s.sandboxID, spans);
      // A sandbox of the generated fleet: it ran (or sat paused) since its start, before any event.
      if (
        e.type === "paused" ||
        e.type === "killed" ||
        e.type === "updated" ||
        e.type === "checkpointed"
      )
        this.open(spans, "running", Math.min(s.startedAt, e.at), e);
      else if (e.type === "resumed") this.open(spans, "paused", Math.min(s.startedAt, e.at), e);
    }
    const last = spans[spans.length - 1];
    const open = last !== undefined && last.to === undefined ? last : undefined;
    switch (e.type) {
      case "created":
        if (!open) this.open(spans, "running", e.at, e);
        return;
      case "paused":
      case "resumed": {
        const next = e.type === "paused" ? "paused" : "running";
        if (open?.state === next) return;
        if (open) open.to = e.at;
        this.open(spans, next, e.at, e);
        return;
      }
      case "killed":
        if (open) open.to = e.at;
        this.kills.push({ id: s.sandboxID, at: e.at });
        this.prune(e.at);
        return;
      default:
        return;
    }
  }

  /** Forgets the sandboxes killed more than the horizon before `now` (unless running again). */
  private prune(now: number): void {
    while (this.head < this.kills.length) {
      const k = this.kills[this.head] as { id: string; at: number };
      if (k.at >= now - this.horizonMs) break;
      this.head++;
      const last = this.spansById.get(k.id)?.at(-1);
      if (last !== undefined && last.to !== undefined && last.to <= k.at)
        this.spansById.delete(k.id);
    }
    if (this.head > 1024 && this.head * 2 > this.kills.length) {
      this.kills = this.kills.slice(this.head);
      this.head = 0;
    }
  }

  private open(
    spans: TruthSpan[],
    state: TruthSpan["state"],
    from: number,
    e: SimLifecycleEvent,
  ): void {
    const s = e.sandbox;
    spans.push({
      state,
      from,
      to: undefined,
      template: s.templateID,
      cpu: s.cpuCount,
      memoryMB: s.memoryMB,
    });
  }
}

/** GET /_sim/cost?since=&until= (epoch ms; default 0 and the clock's now): totals and spans. */
export function serveCostTruth(state: SimState, res: ServerResponse, url: URL): void {
  const since = Number(url.searchParams.get("since") ?? 0);
  const until = Number(url.searchParams.get("until") ?? state.clock.now());
  const truth = state.costTruth;
  const sandboxes: Record<string, readonly TruthSpan[]> = {};
  for (const id of truth.ids()) sandboxes[id] = truth.spans(id);
  const body = JSON.stringify({ since, until, totals: truth.totals(since, until), sandboxes });
  res.writeHead(200, { "content-type": "application/json" }).end(body);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
