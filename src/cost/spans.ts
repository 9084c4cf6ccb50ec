// The spans of the tracked sandboxes: opening, closing and counting them into the totals, and what
// a lifecycle event (already validated, times after origin) says of them. The walks that feed them
// are the accountant's (cost-accountant.ts).
import type { ExecutionSpan, LifecycleEvent } from "../platform/events.js";
import type { PolicySavings } from "./policy-savings.js";
import type { SpendTotals } from "./spend-totals.js";
import { GONE, PAUSED, type Phase, RUNNING, TrackTable } from "./track-table.js";

/** An execution's started_at (whole seconds) matches a span start known to the ms within this. */
const START_MATCH_MS = 1_000;

/** The tracks' spans and the totals they feed. */
export class Spans {
  readonly c: TrackTable;

  constructor(
    /** Whether any attributeBy key is set. */
    private readonly attributed: boolean,
    private readonly spend: SpendTotals,
    private readonly policy: PolicySavings,
  ) {
    this.c = new TrackTable(attributed);
  }

  /**
   * One lifecycle event, its time `ts` and execution's start in ms after origin; `lastWalk`,
   * the last walk's time, dates a kill no walk has yet seen.
   */
  applyEvent(
    e: LifecycleEvent,
    ts: number,
    exec: ExecutionSpan | undefined,
    lastWalk: number,
  ): void {
    let t = this.c.slots.get(e.sandboxId);
    switch (e.type) {
      case "created":
        if (t === undefined) this.track(e.sandboxId, e.templateId, RUNNING, ts, e.metadata);
        return;
      case "resumed":
        t ??= this.track(e.sandboxId, e.templateId, PAUSED, ts, e.metadata);
        if ((this.c.phase[t] as Phase) !== RUNNING) {
          this.close(t, ts);
          this.open(t, RUNNING, ts);
        }
        return;
      case "paused":
      case "killed": {
        const next = e.type === "paused" ? PAUSED : GONE;
        if (t === undefined) {
          if (!exec) return;
          t = this.track(e.sandboxId, e.templateId, RUNNING, exec.startedAt, e.metadata);
        }
        if (exec) this.setResources(t, exec.vcpuCount, exec.memoryMB);
        const phase = this.c.phase[t] as Phase;
        // Told late of a span a walk already closed, while a newer one runs: that one goes on.
        if (phase === RUNNING && exec && this.ofClosedSpan(t, exec)) {
          this.correctClosed(t, exec, (this.c.closedStart[t] as number) + exec.durationMs);
          return;
        }
        const end = exec ? this.spanEnd(t, exec) : ts;
        if (phase === RUNNING) this.close(t, end);
        // A span closed at a guess, told late; a paused one's kill says nothing of its last run.
        else if (phase === GONE || phase === next) {
          if (exec) this.correctClosed(t, exec, end);
          else if (!Number.isNaN(this.c.pendingEnd[t] as number)) this.settle(t, ts);
        }
        if ((this.c.phase[t] as Phase) === next) return;
        if ((this.c.phase[t] as Phase) !== RUNNING) this.close(t, ts);
        if (next === GONE) this.gone(t, end, lastWalk);
        else this.open(t, PAUSED, end);
        return;
      }
      default:
        return;
    }
  }

  /** A new track of `id`, its span in `phase` from `start`. */
  track(
    id: string,
    templateId: string,
    phase: Phase,
    start: number,
    metadata: Readonly<Record<string, string>> | undefined,
  ): number {
    const t = this.c.add(id, this.spend.templateOf(templateId));
    if (metadata && this.attributed) this.c.attr[t] = this.spend.attrOf(metadata);
    this.c.phase[t] = phase;
    this.c.spanStart[t] = start;
    return t;
  }

  /** The resources of slot `t`, where known (NaN: unknown, kept as it was). */
  setResources(t: number, cpu: number, memMB: number): void {
    if (!Number.isNaN(cpu)) this.c.cpu[t] = cpu;
    if (!Number.isNaN(memMB)) this.c.memMB[t] = memMB;
  }

  /** The end of the span an execution describes, on the best start known (E2B's is whole seconds). */
  private spanEnd(t: number, exec: ExecutionSpan): number {
    const closed = this.c.closedStart[t] as number;
    const known = (this.c.phase[t] as Phase) === RUNNING ? (this.c.spanStart[t] as number) : closed;
    const start =
      known !== undefined && Math.abs(known - exec.startedAt) < START_MATCH_MS
        ? known
        : exec.startedAt;
    return start + exec.durationMs;
  }

  /** Whether `exec` describes the last closed span, ended at a guess, rather than the current one. */
  private ofClosedSpan(t: number, exec: ExecutionSpan): boolean {
    const closed = this.c.closedStart[t] as number;
    return (
      !Number.isNaN(this.c.pendingEnd[t] as number) &&
      Math.abs(closed - exec.startedAt) < START_MATCH_MS &&
      !(Math.abs((this.c.spanStart[t] as number) - exec.startedAt) < START_MATCH_MS)
    );
  }

  /** A late event for a span already closed at a guess: counts it to its exact end. */
  private correctClosed(t: number, exec: ExecutionSpan, end: number): void {
    // Only a guessed end is corrected: a kill's execution of a paused sandbox spans the pause too.
    if (Number.isNaN(this.c.pendingEnd[t] as number)) return;
    // NaN (none closed) fails the comparison too.
    if (!(Math.abs((this.c.closedStart[t] as number) - exec.startedAt) < START_MATCH_MS)) return;
    this.settle(t, end);
  }

  /**
   * Settles the last closed span's guessed end at `end` (its event's, or the guess when none
   * came): adds what is missing. Counted only to a walk that saw it running, it never overshoots.
   */
  settle(t: number, end: number): void {
    const c = this.c;
    const start = c.closedStart[t];
    // Nothing closed (NaN), no column (undefined), or nothing pending (end NaN).
    if (start === undefined || Number.isNaN(start) || Number.isNaN(end)) return;
    const target = Math.max(0, end - Math.max(start, 0));
    const counted = c.closedCounted[t] as number;
    if (target > counted) {
      this.add(t, RUNNING, target - counted);
      c.closedCounted[t] = target;
    }
    c.pendingEnd[t] = Number.NaN;
  }

  /** Counts the current span up to `to`. */
  accrue(t: number, to: number): void {
    if ((this.c.phase[t] as Phase) !== RUNNING && (this.c.phase[t] as Phase) !== PAUSED) return;
    if (Number.isNaN(this.c.cpu[t] as number) || Number.isNaN(this.c.memMB[t] as number)) return;
    const target = Math.max(0, to - Math.max(this.c.spanStart[t] as number, 0));
    if (target > (this.c.counted[t] as number)) {
      this.add(t, this.c.phase[t] as Phase, target - (this.c.counted[t] as number));
      this.c.counted[t] = target;
    }
  }

  /**
   * Closes the current span at `end`. A running one ended at a guess (`sure` before `end`, the
   * last walk that saw it) is counted to `sure` while its event may still come to say when.
   */
  close(t: number, end: number, sure = end): void {
    const c = this.c;
    const running = (c.phase[t] as Phase) === RUNNING;
    const provisional = running && c.keepsClosed && sure < end;
    if (running) this.settle(t, c.pendingEnd[t] as number);
    this.accrue(t, provisional ? sure : end);
    if (running) {
      const pending = provisional ? end : Number.NaN;
      c.closeSpan(t, c.spanStart[t] as number, c.counted[t] as number, pending);
    }
    if (this.policy.has(t)) {
      const phase = this.c.phase[t] as Phase;
      this.policy.endOnChange(t, phase === RUNNING, phase === PAUSED, end);
    }
  }

  /** Opens a span of `phase` from `start`. */
  open(t: number, phase: Phase, start: number): void {
    this.c.phase[t] = phase;
    this.c.spanStart[t] = start;
    this.c.counted[t] = 0;
  }

  /** Ends every span of slot `t` at `end`; `at` is the walk that found it gone. */
  gone(t: number, end: number, at: number): void {
    this.policy.endAll(t, end);
    this.c.phase[t] = GONE;
    this.c.spanStart[t] = end;
    this.c.seenAt[t] = Number.isFinite(at) ? at : end;
  }

  private add(t: number, phase: Phase, ms: number): void {
    const c = this.c;
    const cpu = c.cpu[t] as number;
    const memMB = c.memMB[t] as number;
    this.spend.add(c.template[t] as number, phase === RUNNING, cpu, memMB, ms, c.attr[t]);
  }
}
