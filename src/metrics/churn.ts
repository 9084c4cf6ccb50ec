// Churn counters: sandbox ids appearing and vanishing between consecutive complete walks, the
// vanished ones by why they went as far as the last walk that saw them can tell.
import { type SandboxList, visitFullRows } from "../collect/sandbox-table.js";
import { counter, family, TEAM_LABEL } from "../exposition/descriptor.js";
import { type Family, labels } from "../exposition/text.js";
import type { ValueGuard } from "../exposition/value-guard.js";
import { KILL_REASONS } from "../platform/events.js";
import { idOrder } from "../util/id-order.js";
import type { KillLookup } from "./lifecycle-events.js";
import { runSteps, type Steps } from "./render-steps.js";

/**
 * Values of the `reason` label of sandboxes_disappeared_total, in exposition order: `expired` at
 * or after the end time of the last walk that saw the sandbox, `early` before it, `paused` when
 * that walk saw it paused, `probe` for the prober's own sandboxes (it deletes them every run),
 * `unknown` without an end time.
 */
export const DISAPPEARANCE_REASONS = ["early", "expired", "paused", "probe", "unknown"] as const;
const EARLY = 0;
const EXPIRED = 1;
const PAUSED = 2;
const PROBE = 3;
const UNKNOWN = 4;

/**
 * With lifecycle events, the platform's kill reasons follow (`unknown` is shared): a vanished
 * sandbox's reason is its killed event's, and the endAt heuristic only when no event came.
 */
const EVENT_REASONS = [
  ...DISAPPEARANCE_REASONS,
  ...KILL_REASONS.filter((r) => r !== "unknown"),
] as const;
const KILL_HELP =
  " With lifecycle events, a sandbox whose killed event says why is counted under the platform's kill reason instead (request, timeout, admin, orphaned, base_template_missing, seal_failed, resume_failed, unknown), the heuristic deciding only when no event came within two more complete walks.";

export const SANDBOXES_CREATED = counter(
  "sandboxes_created_total",
  "Sandbox ids that appeared between two consecutive complete walks of GET /v2/sandboxes, by template; counted by the poller.",
  ["template", TEAM_LABEL],
);
/** `{kills}` is KILL_HELP with lifecycle events on. */
export const SANDBOXES_DISAPPEARED = counter(
  "sandboxes_disappeared_total",
  "Sandbox ids that vanished between two consecutive complete walks of GET /v2/sandboxes, by template and reason: expired (at or after the endAt of the last walk that listed it, judged when the walk that missed it ended), early (before it), paused (listed paused), probe (the exporter's own probe sandbox), unknown (no endAt); counted by the poller.{kills}",
  ["template", "reason", TEAM_LABEL],
  { vars: { kills: "" } },
);
export const CHURN_FAMILIES = [SANDBOXES_CREATED, SANDBOXES_DISAPPEARED] as const;
/** Complete walks a vanished sandbox waits for its killed event before the heuristic decides. */
const PENDING_WALKS = 2;
/** Vanished sandboxes waiting at most; past that the heuristic decides at once. */
const MAX_PENDING = 100_000;

/** What the last walk knew of a sandbox that decides its reason, beyond its end time. */
const KIND_OTHER = 0;
const KIND_PAUSED = 1;
const KIND_PROBE = 2;

/** Settings of the churn counters. */
export interface ChurnOptions {
  /** States that count as paused (config `states.paused`). */
  pausedStates: readonly string[];
  /** The lifecycle events' kill reasons (poll.events); without it, the heuristic alone. */
  kills?: KillLookup;
}

/** A vanished sandbox waiting for its killed event. */
interface Pending {
  id: string;
  template: string;
  /** The heuristic's reason index, judged when it vanished. */
  fallback: number;
  /** Complete walks left before the fallback counts. */
  left: number;
}

/** One complete walk as churn keeps it: ids ascending, with what each reason needs. */
interface Walk {
  ids: string[];
  templates: string[];
  /** Epoch ms; NaN when the record had none. */
  ends: Float64Array;
  kinds: Uint8Array;
}

const NO_WALK: Walk = {
  ids: [],
  templates: [],
  ends: new Float64Array(0),
  kinds: new Uint8Array(0),
};

/**
 * Counts, by template, ids that appeared or vanished between two consecutive complete walks, so
 * sandboxes living shorter than a scrape interval still show in rates. The first complete walk
 * and the first one after an incomplete walk only set the baseline: an incomplete list would
 * report every sandbox it missed as gone.
 */
export class ChurnTracker {
  /** The last complete walk. */
  private last: Walk = NO_WALK;
  private walks = 0;
  private baseline = false;
  private readonly paused: Set<string>;
  private readonly created = new Map<string, number>();
  /** Per template, one count per `reasons` entry. */
  private readonly disappeared = new Map<string, number[]>();
  /** Values of the reason label: DISAPPEARANCE_REASONS, then the kill reasons with events. */
  private readonly reasons: readonly string[];
  private readonly reasonIndex: ReadonlyMap<string, number>;
  private readonly kills: KillLookup | undefined;
  private pending: Pending[] = [];

  constructor(o: ChurnOptions) {
    this.paused = new Set(o.pausedStates.map((s) => s.toLowerCase()));
    this.kills = o.kills;
    this.reasons = o.kills ? EVENT_REASONS : DISAPPEARANCE_REASONS;
    this.reasonIndex = new Map(this.reasons.map((r, i) => [r, i]));
  }

  /** Feeds one walk of this shard's sandboxes, which ended (noticed what had gone) at `at`. */
  observe(sandboxes: SandboxList, complete: boolean, at: number): void {
    runSteps(this.steps(sandboxes, complete, at, Number.POSITIVE_INFINITY));
  }

  /** The same in steps, yielding after every `slice` ids (the sort of an unsorted walk is one step). */
  *steps(sandboxes: SandboxList, complete: boolean, at: number, slice: number): Steps<void> {
    if (!complete) {
      this.baseline = false;
      return;
    }
    const counting = this.baseline ? 1 : 0;
    const walk = yield* this.sortedWalk(sandboxes, slice);
    yield;
    this.walks++;
    this.settlePending();
    // Both lists ascending: one merge finds the ids that came and went, without hashing.
    const prev = this.last;
    const { ids, templates } = walk;
    let a = 0;
    let b = 0;
    let left = slice;
    while (a < prev.ids.length || b < ids.length) {
      if (--left === 0) {
        yield;
        left = slice;
      }
      const old = prev.ids[a];
      const now = ids[b];
      if (now === undefined || (old !== undefined && old < now)) {
        const template = prev.templates[a] as string;
        const kind = prev.kinds[a] as number;
        let reason = reasonOf(kind, prev.ends[a] as number, at);
        if (this.kills && kind !== KIND_PROBE && counting === 1) {
          const id = old as string;
          const killed = this.kills.killReason(id);
          if (killed !== undefined) reason = this.reasonIndex.get(killed) ?? UNKNOWN;
          else if (this.pending.length < MAX_PENDING) {
            this.pending.push({ id, template, fallback: reason, left: PENDING_WALKS });
            countsOf(this.disappeared, template, this.reasons.length);
            a++;
            continue;
          }
        }
        const counts = countsOf(this.disappeared, template, this.reasons.length);
        counts[reason] = (counts[reason] as number) + counting;
        a++;
      } else if (old === undefined || now < old) {
        const t = templates[b] as string;
        this.created.set(t, (this.created.get(t) ?? 0) + counting);
        countsOf(this.disappeared, t, this.reasons.length);
        b++;
      } else {
        a++;
        b++;
      }
    }
    this.last = walk;
    this.baseline = true;
  }

  /** The two counter families; none before the first complete walk. */
  families(ns: string, guard?: ValueGuard): Family[] {
    if (this.walks === 0) return [];
    const created = family(ns, SANDBOXES_CREATED);
    const gone = family(ns, SANDBOXES_DISAPPEARED, { kills: this.kills ? KILL_HELP : "" });
    for (const t of [...this.created.keys()].sort()) {
      created.add(labels([["template", t]], guard), this.created.get(t) ?? 0);
      const counts = this.disappeared.get(t);
      this.reasons.forEach((reason, i) => {
        gone.add(
          labels(
            [
              ["template", t],
              ["reason", reason],
            ],
            guard,
          ),
          counts?.[i] ?? 0,
        );
      });
    }
    return [created, gone];
  }

  /** Vanished sandboxes still waiting: now their killed event, or after PENDING_WALKS, the heuristic. */
  private settlePending(): void {
    if (this.pending.length === 0) return;
    const kills = this.kills;
    const waiting: Pending[] = [];
    for (const p of this.pending) {
      const killed = kills?.killReason(p.id);
      let reason: number | undefined;
      if (killed !== undefined) reason = this.reasonIndex.get(killed) ?? UNKNOWN;
      else if (--p.left <= 0) reason = p.fallback;
      if (reason === undefined) {
        waiting.push(p);
        continue;
      }
      const counts = countsOf(this.disappeared, p.template, this.reasons.length);
      counts[reason] = (counts[reason] as number) + 1;
    }
    this.pending = waiting;
  }

  /**
   * The walk's ids in ascending order with what churn keeps of each, each id once (its first
   * record). A compact table is in id order already, and then no sort runs; whole records
   * (per-sandbox series or policy on) keep walk order and are sorted here when the platform pages
   * in another order.
   */
  private *sortedWalk(sandboxes: SandboxList, slice: number): Steps<Walk> {
    // Sized once: grown by push, 100,000 entries reallocate each list a dozen times.
    const n0 = sandboxes.length;
    const walk: Walk = {
      ids: new Array<string>(n0),
      templates: new Array<string>(n0),
      ends: new Float64Array(n0),
      kinds: new Uint8Array(n0),
    };
    const paused = this.paused;
    let sorted = true;
    let n = 0;
    yield* visitFullRows(
      sandboxes,
      (id, templateId, state, _cpu, _memory, _started, endAt, probe) => {
        if (n > 0 && id <= (walk.ids[n - 1] as string)) sorted = false;
        walk.ids[n] = id;
        walk.templates[n] = templateId;
        walk.ends[n] = endAt ?? Number.NaN;
        walk.kinds[n] = probe ? KIND_PROBE : paused.has(state) ? KIND_PAUSED : KIND_OTHER;
        n++;
      },
      slice,
    );
    walk.ids.length = n;
    walk.templates.length = n;
    if (sorted) return walk;
    yield;
    // Equal ids keep walk order, so the first record of a repeated id comes first.
    const order = idOrder(walk.ids);
    yield;
    const out: Walk = {
      ids: [],
      templates: [],
      ends: new Float64Array(n),
      kinds: new Uint8Array(n),
    };
    for (const i of order) {
      const id = walk.ids[i] as string;
      if (out.ids[out.ids.length - 1] === id) continue;
      const k = out.ids.length;
      out.ids.push(id);
      out.templates.push(walk.templates[i] as string);
      out.ends[k] = walk.ends[i] as number;
      out.kinds[k] = walk.kinds[i] as number;
    }
    return out;
  }
}

/** Why a sandbox the last walk saw is gone, judged at `at` (epoch ms). */
function reasonOf(kind: number, end: number, at: number): number {
  if (kind === KIND_PROBE) return PROBE;
  if (kind === KIND_PAUSED) return PAUSED;
  if (Number.isNaN(end)) return UNKNOWN;
  return at >= end ? EXPIRED : EARLY;
}

/** A template's disappearance counts, every reason made at 0 so its series exists before it counts. */
function countsOf(m: Map<string, number[]>, template: string, reasons: number): number[] {
  let counts = m.get(template);
  if (!counts) {
    counts = new Array<number>(reasons).fill(0);
    m.set(template, counts);
  }
  return counts;
}
