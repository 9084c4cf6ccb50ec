// Churn counters: sandbox ids appearing and vanishing between consecutive complete walks, the
// vanished ones by why they went as far as the last walk that saw them can tell.
import { type SandboxList, visitFullRows } from "../collect/sandbox-table.js";
import { idOrder } from "../util/id-order.js";
import { Family, labels } from "./exposition/text.js";
import type { ValueGuard } from "./exposition/value-guard.js";
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

/** What the last walk knew of a sandbox that decides its reason, beyond its end time. */
const KIND_OTHER = 0;
const KIND_PAUSED = 1;
const KIND_PROBE = 2;

/** Settings of the churn counters. */
export interface ChurnOptions {
  /** States that count as paused (config `states.paused`). */
  pausedStates: readonly string[];
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
  /** Per template, one count per DISAPPEARANCE_REASONS entry. */
  private readonly disappeared = new Map<string, number[]>();

  constructor(o: ChurnOptions) {
    this.paused = new Set(o.pausedStates.map((s) => s.toLowerCase()));
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
        const counts = countsOf(this.disappeared, prev.templates[a] as string);
        const reason = reasonOf(prev.kinds[a] as number, prev.ends[a] as number, at);
        counts[reason] = (counts[reason] as number) + counting;
        a++;
      } else if (old === undefined || now < old) {
        const t = templates[b] as string;
        this.created.set(t, (this.created.get(t) ?? 0) + counting);
        countsOf(this.disappeared, t);
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
    const created = new Family(
      `${ns}_sandboxes_created`,
      "counter",
      "Sandbox ids that appeared between two consecutive complete walks of GET /v2/sandboxes, by template; counted by the poller.",
    );
    const gone = new Family(
      `${ns}_sandboxes_disappeared`,
      "counter",
      "Sandbox ids that vanished between two consecutive complete walks of GET /v2/sandboxes, by template and reason: expired (at or after the endAt of the last walk that listed it, judged when the walk that missed it ended), early (before it), paused (listed paused), probe (the exporter's own probe sandbox), unknown (no endAt); counted by the poller.",
    );
    for (const t of [...this.created.keys()].sort()) {
      created.add(labels([["template", t]], guard), this.created.get(t) ?? 0);
      const counts = this.disappeared.get(t);
      DISAPPEARANCE_REASONS.forEach((reason, i) => {
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
function countsOf(m: Map<string, number[]>, template: string): number[] {
  let counts = m.get(template);
  if (!counts) {
    counts = DISAPPEARANCE_REASONS.map(() => 0);
    m.set(template, counts);
  }
  return counts;
}
