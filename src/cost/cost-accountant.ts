// Resource-seconds, spend and policy savings integrated on the platform's own times: a span starts
// at the sandbox's startedAt (or its resume), and ends at the killed/paused event's execution
// (started_at + execution_time) where events arrive, else at its endAt when it expired, else at
// the midpoint between the last walk that saw it and the first that did not. Pure: times come
// from the inputs, `now` only judges what is in the future. Nothing before `origin` is counted.
// Inside, times are ms after `origin`. The spans and what events say of them are in spans.ts, the
// tracks in track-table.ts, the totals they feed in spend-totals.ts, the policy's savings in
// policy-savings.ts, the inputs and their bounds in cost-inputs.ts.
import { EVENTS_SETTLE_MS } from "../collect/events.js";
import type { TableRows } from "../collect/sandbox-table.js";
import type { LifecycleEvent } from "../platform/events.js";
import type { Clock } from "../util/clock.js";
import {
  type DropReason,
  executionOk,
  FUTURE_SLACK_MS,
  resourcesOk,
  type WalkRow,
  type WalkRowVisitor,
} from "./cost-inputs.js";
import type { CostSettings } from "./cost-settings.js";
import { PolicySavings, type SavingMode, type SavingsTotal } from "./policy-savings.js";
import { NO_SLOT, RowSlots } from "./row-slots.js";
import { Spans } from "./spans.js";
import { MIB_PER_GIB, SpendTotals, type TemplateTotals } from "./spend-totals.js";
import { GONE, OTHER, PAUSED, type Phase, RUNNING, type TrackTable } from "./track-table.js";

/** How long a gone sandbox is remembered for a late event (E2B stores events up to a minute late). */
const GONE_MEMORY_MS = 15 * 60_000;
/** Walk intervals after EVENTS_SETTLE_MS a guessed end waits for its event before it is taken. */
const SETTLE_WALKS = 2;
/** State names whose phase is remembered; a platform has a handful. */
const MAX_CACHED_STATES = 16;

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
  private readonly spans: Spans;
  /** The tracks (the spans' table). */
  private readonly c: TrackTable;
  private readonly policy = new PolicySavings();
  private readonly spend: SpendTotals;
  private readonly running: ReadonlySet<string>;
  private readonly paused: ReadonlySet<string>;
  private readonly drops = new Map<DropReason, number>();
  private lastWalk = Number.NEGATIVE_INFINITY;
  private previousWalk = Number.NEGATIVE_INFINITY;
  /** The clock during the walk being accounted. */
  private now = 0;
  /** Phase by state name, for the few names a platform uses (two Set lookups a row otherwise). */
  private readonly stateNames: string[] = [];
  private readonly statePhases: Phase[] = [];
  private readonly visit: WalkRowVisitor = (id, tpl, state, cpu, mem, startedAt, endAt, meta) => {
    const origin = this.o.origin;
    this.observeRow(
      id,
      NO_SLOT,
      tpl,
      this.phaseOf(state),
      cpu ?? Number.NaN,
      mem ?? Number.NaN,
      startedAt === undefined ? Number.NaN : startedAt - origin,
      endAt === undefined ? Number.NaN : endAt - origin,
      meta,
    );
  };
  /** Slots by row of the last table walked. */
  private readonly rowSlots = new RowSlots();
  /** The interval between the last two walks (0 before the second). */
  private gap = 0;

  constructor(private readonly o: CostAccountantOptions) {
    this.spend = new SpendTotals(o.prices, o.attributeBy);
    this.spans = new Spans(o.attributeBy.length > 0, this.spend, this.policy);
    this.c = this.spans.c;
    if (o.events !== false) this.c.keepClosedSpans();
    this.running = new Set(o.runningStates);
    this.paused = new Set(o.pausedStates);
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
    const row = (v: WalkRowVisitor) => (r: WalkRow) =>
      v(r.id, r.templateId, r.state, r.cpuCount, r.memoryMB, r.startedAt, r.endAt, r.metadata);
    this.observeRows(walkAt, (visit) => forEach(row(visit)), rows);
  }

  /** observeWalk with each row as arguments: a table's walk makes no object per row. */
  observeRows(walkAt: number, forEach: (visit: WalkRowVisitor) => void, rows?: number): void {
    if (!this.beginWalk(walkAt, rows)) return;
    // Records may free slots the last table's rows point at.
    this.rowSlots.forget();
    forEach(this.visit);
    this.endWalk();
  }

  /**
   * observeRows over a table's columns: each template and state resolved once per table, and
   * each row's slot found by its position in the last table (see RowSlots), not by its id.
   */
  observeTable(walkAt: number, rows: TableRows): void {
    if (!this.beginWalk(walkAt, rows.ids.length)) return;
    const origin = this.o.origin;
    const phases = rows.states.map((state) => this.phaseOf(state));
    const { ids, templates, template, state, cpu, memory, started, ends } = rows;
    const slots = this.rowSlots;
    slots.begin(ids);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      const t = this.observeRow(
        id,
        slots.find(id),
        templates[template[i] as number] as string,
        phases[state[i] as number] as Phase,
        cpu[i] as number,
        memory[i] as number,
        (started[i] as number) - origin,
        (ends[i] as number) - origin,
        undefined,
      );
      slots.set(i, t);
    }
    slots.end();
    this.endWalk();
  }

  /** Starts accounting a walk at `walkAt` of `rows` rows; false when it is older than the last. */
  private beginWalk(walkAt: number, rows: number | undefined): boolean {
    const at = walkAt - this.o.origin;
    if (!(at >= this.lastWalk)) {
      this.drop("time_backwards");
      return false;
    }
    this.previousWalk = this.lastWalk;
    this.lastWalk = at;
    if (Number.isFinite(this.previousWalk)) this.gap = at - this.previousWalk;
    this.now = this.o.clock.now() - this.o.origin;
    if (rows !== undefined) this.c.reserve(rows);
    return true;
  }

  /** After every listed row: the tracks the walk missed, and the policy's savings. */
  private endWalk(): void {
    const at = this.lastWalk;
    const previous = this.previousWalk;
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
      this.spans.settle(t, c.pendingEnd[t] as number);
    if ((c.phase[t] as Phase) === GONE) {
      // Not one whose end is after this walk's start: it may be listed in this walk (RowSlots
      // relies on a listed sandbox keeping its slot).
      if (at - seenAt > GONE_MEMORY_MS && (c.spanStart[t] as number) < at) c.remove(id, t);
      return;
    }
    if (seenAt >= at) return;
    // Known from an event only, born after the walk before: this walk may have missed it.
    if (Number.isNaN(seenAt) && !((c.spanStart[t] as number) < previous)) return;
    // Listed before and not now: gone at its endAt when that passed in between, else midway.
    const since = Number.isNaN(seenAt) ? at : seenAt;
    const endAt = c.endAt[t] as number;
    const end = endAt > since && endAt <= at ? endAt : (since + at) / 2;
    this.spans.close(t, end, Number.isNaN(seenAt) ? (c.spanStart[t] as number) : since);
    this.spans.gone(t, end, at);
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
    this.spans.applyEvent(e, ts, exec, this.lastWalk);
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

  /**
   * Prices from a reload: every second counted from now on (the spans are counted up to each
   * walk, so from the last walk on) costs the new ones; what was counted keeps its cost.
   */
  setPrices(prices: CostSettings["prices"]): void {
    this.spend.setPrices(prices);
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

  /**
   * One listed sandbox: `t` is its slot when known (else it is looked up), times are ms after
   * origin and numbers NaN where absent. Returns its slot, NO_SLOT when it was dropped untracked.
   */
  private observeRow(
    id: string,
    known: number,
    templateId: string,
    phase: Phase,
    cpu: number,
    mem: number,
    startedAt: number,
    rowEndAt: number,
    metadata: Readonly<Record<string, string>> | undefined,
  ): number {
    const c = this.c;
    const at = this.lastWalk;
    let t = known === NO_SLOT ? (c.slots.get(id) ?? NO_SLOT) : known;
    // An absent count is unknown (the span waits for it); a present one must make sense.
    if (!resourcesOk(Number.isNaN(cpu) ? 0 : cpu, Number.isNaN(mem) ? 0 : mem)) {
      this.drop("bad_resources");
      if (t !== NO_SLOT) c.seenAt[t] = at;
      return t;
    }
    if (startedAt > this.now + FUTURE_SLACK_MS) {
      this.drop("future_start");
      if (t !== NO_SLOT) c.seenAt[t] = at;
      return t;
    }
    let firstListed: boolean;
    if (t === NO_SLOT) {
      firstListed = true;
      // First seen: a running one began at its start; a paused one is counted from now on.
      const start = phase === RUNNING && startedAt < at ? startedAt : at;
      t = this.spans.track(id, templateId, phase, start, metadata);
    } else firstListed = Number.isNaN(c.seenAt[t] as number);
    if (metadata !== undefined && this.o.attributeBy.length > 0)
      c.attr[t] = this.spend.attrOf(metadata);
    this.spans.setResources(t, cpu, mem);
    // Without both counts its spend stays 0 until they come: said once per sandbox.
    if (firstListed && (Number.isNaN(c.cpu[t] as number) || Number.isNaN(c.memMB[t] as number)))
      this.drop("missing_resources");
    c.endAt[t] = rowEndAt;
    const was = c.phase[t] as Phase;
    if (was !== phase) {
      // An event newer than this listing (the list was read before it) says more than the list.
      if ((c.spanStart[t] as number) >= at) {
        if (was !== GONE) c.seenAt[t] = at;
        return t;
      }
      if (was === GONE) this.spans.open(t, phase, at);
      else {
        // Changed between two walks with no event to say when: midway.
        const seenAt = c.seenAt[t] as number;
        const since = Number.isNaN(seenAt) ? at : seenAt;
        const switchAt = Math.max((since + at) / 2, c.spanStart[t] as number);
        this.spans.close(t, switchAt, since);
        this.spans.open(t, phase, switchAt);
      }
    }
    c.seenAt[t] = at;
    this.spans.accrue(t, at);
    return t;
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

  private drop(reason: DropReason): void {
    this.drops.set(reason, (this.drops.get(reason) ?? 0) + 1);
  }
}
