// Resource-seconds, spend and policy savings integrated on the platform's own times: a span starts
// at the sandbox's startedAt (or its resume), and ends at the killed/paused event's execution
// (started_at + execution_time) where events arrive, else at its endAt when it expired, else at
// the midpoint between the last walk that saw it and the first that did not. Pure: times come
// from the inputs, `now` only judges what is in the future. Nothing before `origin` is counted.
// Inside, times are ms after `origin`. The tracks live in track-table.ts, the totals they feed in
// spend-totals.ts, the policy's savings in policy-savings.ts.
import { EVENTS_SETTLE_MS } from "../collect/events.js";
import type { ExecutionSpan, LifecycleEvent } from "../platform/events.js";
import type { Clock } from "../util/clock.js";
import type { CostSettings } from "./cost-settings.js";
import { PolicySavings, type SavingMode, type SavingsTotal } from "./policy-savings.js";
import { MIB_PER_GIB, SpendTotals, type TemplateTotals } from "./spend-totals.js";
import { GONE, OTHER, PAUSED, type Phase, RUNNING, TrackTable } from "./track-table.js";

/** Most vCPUs and MB of RAM one sandbox is believed to have; more is a bad record. */
const MAX_VCPUS = 1024;
const MAX_MEMORY_MB = 16 * 1024 * 1024;
/** How far ahead of `now` a start or an event may lie (clock skew) before it is refused. */
const FUTURE_SLACK_MS = 60_000;
/** How long a gone sandbox is remembered for a late event (E2B stores events up to a minute late). */
const GONE_MEMORY_MS = 15 * 60_000;
/** An execution's started_at (whole seconds) matches a span start known to the ms within this. */
const START_MATCH_MS = 1_000;
/** Longest one execution (one run, create or resume to pause or kill) is believed to last. */
const MAX_EXECUTION_MS = 7 * 24 * 3_600_000;
/** Walk intervals after EVENTS_SETTLE_MS a guessed end waits for its event before it is taken. */
const SETTLE_WALKS = 2;
/** State names whose phase is remembered; a platform has a handful. */
const MAX_CACHED_STATES = 16;

/** Why an input was dropped; the `reason` label of the dropped-inputs counter. */
export type DropReason =
  | "bad_execution"
  | "bad_resources"
  | "missing_resources"
  | "future_start"
  | "future_event"
  | "time_backwards"
  | "unknown_sandbox";
export const DROP_REASONS: readonly DropReason[] = [
  "bad_execution",
  "bad_resources",
  "missing_resources",
  "future_start",
  "future_event",
  "time_backwards",
  "unknown_sandbox",
];

/** One sandbox of a walk, as the poller's list holds it. */
export interface WalkRow {
  id: string;
  templateId: string;
  state: string;
  cpuCount: number | undefined;
  memoryMB: number | undefined;
  startedAt: number | undefined;
  endAt: number | undefined;
  metadata: Readonly<Record<string, string>> | undefined;
}

/** One sandbox of a walk as arguments (WalkRow's fields in order). */
export type WalkRowVisitor = (
  id: string,
  templateId: string,
  state: string,
  cpuCount: number | undefined,
  memoryMB: number | undefined,
  startedAt: number | undefined,
  endAt: number | undefined,
  metadata: Readonly<Record<string, string>> | undefined,
) => void;

/** Settings of the accountant. */
export interface CostAccountantOptions {
  prices: CostSettings["prices"];
  attributeBy: readonly string[];
  runningStates: readonly string[];
  pausedStates: readonly string[];
  /** Epoch ms before which nothing is counted: the process start (a restart invents nothing). */
  origin: number;
  /**
   * Whether lifecycle events may come from the start (default true): each sandbox's last closed
   * span is kept for a late event's correction. Off, expectEvents turns it on when a source is wired.
   */
  events?: boolean;
  clock: Clock;
}

/** Integrates cost over sandbox spans; read by the cost families when scraped. */
export class CostAccountant {
  private readonly c: TrackTable;
  private readonly policy = new PolicySavings();
  private readonly spend: SpendTotals;
  private readonly running: ReadonlySet<string>;
  private readonly paused: ReadonlySet<string>;
  private readonly drops = new Map<DropReason, number>();
  private lastWalk = Number.NEGATIVE_INFINITY;
  /** The clock during the walk being accounted. */
  private now = 0;
  /** Phase by state name, for the few names a platform uses (two Set lookups a row otherwise). */
  private readonly stateNames: string[] = [];
  private readonly statePhases: Phase[] = [];
  private readonly visit: WalkRowVisitor = (id, tpl, state, cpu, mem, startedAt, endAt, meta) =>
    this.observeRow(id, tpl, state, cpu, mem, startedAt, endAt, meta);
  /** The interval between the last two walks (0 before the second). */
  private gap = 0;

  constructor(private readonly o: CostAccountantOptions) {
    this.c = new TrackTable(o.attributeBy.length > 0);
    if (o.events !== false) this.c.keepClosedSpans();
    this.running = new Set(o.runningStates);
    this.paused = new Set(o.pausedStates);
    this.spend = new SpendTotals(o.prices, o.attributeBy);
  }

  /**
   * Accounts one walk taken at `at` (the cycle's start): every listed sandbox, then the gone.
   * `rows`, the walk's length when known, sizes the columns once.
   */
  observeWalk(
    walkAt: number,
    forEach: (visit: (row: WalkRow) => void) => void,
    rows?: number,
  ): void {
    this.observeRows(
      walkAt,
      (visit) =>
        forEach((r) =>
          visit(
            r.id,
            r.templateId,
            r.state,
            r.cpuCount,
            r.memoryMB,
            r.startedAt,
            r.endAt,
            r.metadata,
          ),
        ),
      rows,
    );
  }

  /** observeWalk with each row as arguments: a table's walk makes no object per row. */
  observeRows(walkAt: number, forEach: (visit: WalkRowVisitor) => void, rows?: number): void {
    const at = walkAt - this.o.origin;
    if (!(at >= this.lastWalk)) {
      this.drop("time_backwards");
      return;
    }
    const previous = this.lastWalk;
    this.lastWalk = at;
    if (Number.isFinite(previous)) this.gap = at - previous;
    this.now = this.o.clock.now() - this.o.origin;
    if (rows !== undefined) this.c.reserve(rows);
    forEach(this.visit);
    // forEach, not for-of over entries: no [id, slot] pair allocated per sandbox.
    this.c.slots.forEach((t, id) => {
      this.afterWalk(id, t, at, previous);
    });
    this.policy.accrueAll(at);
  }

  /** Lifecycle events will come from now on: keep each sandbox's last closed span for them. */
  expectEvents(): void {
    this.c.keepClosedSpans();
  }

  /** A track after the walk at `at`: forgotten when long gone, closed when the walk missed it. */
  private afterWalk(id: string, t: number, at: number, previous: number): void {
    const c = this.c;
    const seenAt = c.seenAt[t] as number;
    // No event came for a guessed end in time: the guess stands.
    if (at - (c.pendingEnd[t] as number) > EVENTS_SETTLE_MS + SETTLE_WALKS * this.gap)
      this.settle(t, c.pendingEnd[t] as number);
    if ((c.phase[t] as Phase) === GONE) {
      if (at - seenAt > GONE_MEMORY_MS) c.remove(id, t);
      return;
    }
    if (seenAt >= at) return;
    // Known from an event only, born after the walk before: this walk may have missed it.
    if (Number.isNaN(seenAt) && !((c.spanStart[t] as number) < previous)) return;
    // Listed before and not now: gone at its endAt when that passed in between, else midway.
    const since = Number.isNaN(seenAt) ? at : seenAt;
    const endAt = c.endAt[t] as number;
    const end = endAt > since && endAt <= at ? endAt : (since + at) / 2;
    this.close(t, end, Number.isNaN(seenAt) ? (c.spanStart[t] as number) : since);
    this.gone(t, end, at);
  }

  /** Accounts one lifecycle event (new ones only: the ledger de-duplicates). */
  observeEvent(e: LifecycleEvent): void {
    this.c.keepClosedSpans();
    const origin = this.o.origin;
    const ts = e.timestamp - origin;
    if (ts > this.o.clock.now() - origin + FUTURE_SLACK_MS) {
      this.drop("future_event");
      return;
    }
    const exec = e.execution && { ...e.execution, startedAt: e.execution.startedAt - origin };
    if (exec && !resourcesOk(exec.vcpuCount, exec.memoryMB)) {
      this.drop("bad_resources");
      return;
    }
    if (exec && !executionOk(exec, ts)) {
      this.drop("bad_execution");
      return;
    }
    let t = this.c.slots.get(e.sandboxId);
    switch (e.type) {
      case "created":
        if (t === undefined) this.newTrack(e.sandboxId, e.templateId, RUNNING, ts, e.metadata);
        return;
      case "resumed":
        t ??= this.newTrack(e.sandboxId, e.templateId, PAUSED, ts, e.metadata);
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
          t = this.newTrack(e.sandboxId, e.templateId, RUNNING, exec.startedAt, e.metadata);
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
        if (next === GONE) this.gone(t, end, this.lastWalk);
        else this.open(t, PAUSED, end);
        return;
      }
      default:
        return;
    }
  }

  /**
   * A pause the policy made (`done`) or planned (`dry_run`) at `at`: the running cost it avoids
   * from then until the sandbox runs again, is gone, or reaches its endAt.
   */
  policyPause(rule: string, sandboxId: string, mode: SavingMode, pausedAt: number): void {
    const t = this.c.slots.get(sandboxId);
    if (
      t === undefined ||
      (this.c.phase[t] as Phase) === GONE ||
      Number.isNaN(this.c.cpu[t] as number) ||
      Number.isNaN(this.c.memMB[t] as number)
    ) {
      this.drop("unknown_sandbox");
      return;
    }
    const p = this.spend.pricesOf(this.c.template[t] as number);
    const perMs =
      ((this.c.cpu[t] as number) * p.vcpuSecond +
        ((this.c.memMB[t] as number) / MIB_PER_GIB) * p.memoryGiBSecond) /
      1000;
    const endAt = this.c.endAt[t] as number;
    const cap = Number.isNaN(endAt) ? Number.POSITIVE_INFINITY : endAt;
    this.policy.start({ slot: t, sandboxId, rule, mode, at: pausedAt - this.o.origin, perMs, cap });
  }

  /**
   * A policy run at `at` that still plans `(rule, sandbox)` for the pairs in `planned`: a
   * dry-run saving whose pair is missing ends there (the sandbox stopped being idle).
   */
  policyRun(runAt: number, planned: (rule: string, sandboxId: string) => boolean): void {
    this.policy.endUnplanned(runAt - this.o.origin, planned);
  }

  /** Registers a rule's savings series at 0 (so rates exist before its first pause). */
  declareRule(rule: string, mode: SavingMode): void {
    this.policy.declare(rule, mode);
  }

  /** Resource-seconds by template (read when scraped). */
  usage(): Iterable<Readonly<TemplateTotals>> {
    return this.spend.usage();
  }

  /** Savings by rule and mode. */
  savings(): Iterable<Readonly<SavingsTotal>> {
    return this.policy.totals();
  }

  /** Spend per value of the i-th attributeBy key, and what counted as other at once. */
  attribution(i: number): { values: ReadonlyMap<string, number>; overflow: number } {
    return this.spend.attribution(i);
  }

  /** Inputs dropped, by reason. */
  dropped(): ReadonlyMap<DropReason, number> {
    return this.drops;
  }

  /** Sandboxes tracked now (for the bench and tests). */
  get size(): number {
    return this.c.slots.size;
  }

  private observeRow(
    id: string,
    templateId: string,
    state: string,
    cpuCount: number | undefined,
    memoryMB: number | undefined,
    rowStartedAt: number | undefined,
    rowEndAt: number | undefined,
    metadata: Readonly<Record<string, string>> | undefined,
  ): void {
    const c = this.c;
    const at = this.lastWalk;
    const cpu = cpuCount ?? Number.NaN;
    const mem = memoryMB ?? Number.NaN;
    let t = c.slots.get(id);
    // An absent count is unknown (the span waits for it); a present one must make sense.
    if (!resourcesOk(Number.isNaN(cpu) ? 0 : cpu, Number.isNaN(mem) ? 0 : mem)) {
      this.drop("bad_resources");
      if (t !== undefined) c.seenAt[t] = at;
      return;
    }
    const startedAt = rowStartedAt === undefined ? undefined : rowStartedAt - this.o.origin;
    if (startedAt !== undefined && startedAt > this.now + FUTURE_SLACK_MS) {
      this.drop("future_start");
      if (t !== undefined) c.seenAt[t] = at;
      return;
    }
    const phase = this.phaseOf(state);
    let firstListed: boolean;
    if (t === undefined) {
      firstListed = true;
      // First seen: a running one began at its start; a paused one is counted from now on.
      const start = phase === RUNNING ? Math.min(startedAt ?? at, at) : at;
      t = this.newTrack(id, templateId, phase, start, metadata);
    } else {
      const seenAt = c.seenAt[t] as number;
      firstListed = Number.isNaN(seenAt);
    }
    if (metadata !== undefined && this.o.attributeBy.length > 0)
      c.attr[t] = this.spend.attrOf(metadata);
    this.setResources(t, cpu, mem);
    // Without both counts its spend stays 0 until they come: said once per sandbox.
    if (firstListed && (Number.isNaN(c.cpu[t] as number) || Number.isNaN(c.memMB[t] as number)))
      this.drop("missing_resources");
    c.endAt[t] = rowEndAt === undefined ? Number.NaN : rowEndAt - this.o.origin;
    const was = c.phase[t] as Phase;
    if (was !== phase) {
      // An event newer than this listing (the list was read before it) says more than the list.
      if ((c.spanStart[t] as number) >= at) {
        if (was !== GONE) c.seenAt[t] = at;
        return;
      }
      if (was === GONE) this.open(t, phase, at);
      else {
        // Changed between two walks with no event to say when: midway.
        const seenAt = c.seenAt[t] as number;
        const since = Number.isNaN(seenAt) ? at : seenAt;
        const switchAt = Math.max((since + at) / 2, c.spanStart[t] as number);
        this.close(t, switchAt, since);
        this.open(t, phase, switchAt);
      }
    }
    c.seenAt[t] = at;
    this.accrue(t, at);
  }

  /** The phase a state name means (running, paused, or other). */
  private phaseOf(state: string): Phase {
    const names = this.stateNames;
    for (let i = 0; i < names.length; i++)
      if (names[i] === state) return this.statePhases[i] as Phase;
    const phase: Phase = this.running.has(state)
      ? RUNNING
      : this.paused.has(state)
        ? PAUSED
        : OTHER;
    if (names.length < MAX_CACHED_STATES) {
      names.push(state);
      this.statePhases.push(phase);
    }
    return phase;
  }

  private newTrack(
    id: string,
    templateId: string,
    phase: Phase,
    start: number,
    metadata: Readonly<Record<string, string>> | undefined,
  ): number {
    const t = this.c.add(id, this.spend.templateOf(templateId));
    if (metadata && this.o.attributeBy.length > 0) this.c.attr[t] = this.spend.attrOf(metadata);
    this.c.phase[t] = phase;
    this.c.spanStart[t] = start;
    return t;
  }

  private setResources(t: number, cpu: number, memMB: number): void {
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
  private settle(t: number, end: number): void {
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
  private accrue(t: number, to: number): void {
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
  private close(t: number, end: number, sure = end): void {
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

  private open(t: number, phase: Phase, start: number): void {
    this.c.phase[t] = phase;
    this.c.spanStart[t] = start;
    this.c.counted[t] = 0;
  }

  private gone(t: number, end: number, at: number): void {
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

  private drop(reason: DropReason): void {
    this.drops.set(reason, (this.drops.get(reason) ?? 0) + 1);
  }
}

/** An execution that ends at its event (E2B writes both at once) and lasts no longer than a run can. */
function executionOk(exec: ExecutionSpan, ts: number): boolean {
  const end = exec.startedAt + exec.durationMs;
  return (
    Math.abs(end - ts) <= FUTURE_SLACK_MS &&
    exec.durationMs >= 0 &&
    exec.durationMs <= MAX_EXECUTION_MS
  );
}

function resourcesOk(cpu: number, memMB: number): boolean {
  return cpu >= 0 && cpu <= MAX_VCPUS && memMB >= 0 && memMB <= MAX_MEMORY_MB;
}
