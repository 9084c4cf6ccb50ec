// Churn counters: sandbox ids appearing and vanishing between consecutive complete walks.
import type { SandboxList } from "../collect/sandbox-table.js";
import { idOrder } from "../util/id-order.js";
import { Family, labels } from "./exposition/text.js";
import type { ValueGuard } from "./exposition/value-guard.js";
import { runSteps, type Steps, visitRows } from "./render-steps.js";

/**
 * Counts, by template, ids that appeared or vanished between two consecutive complete walks, so
 * sandboxes living shorter than a scrape interval still show in rates. The first complete walk
 * and the first one after an incomplete walk only set the baseline: an incomplete list would
 * report every sandbox it missed as gone.
 */
export class ChurnTracker {
  /** Ids of the last complete walk in ascending order, and their templates. */
  private ids: string[] = [];
  private templates: string[] = [];
  private walks = 0;
  private baseline = false;
  private readonly created = new Map<string, number>();
  private readonly disappeared = new Map<string, number>();

  /** Feeds one walk of this shard's sandboxes. */
  observe(sandboxes: SandboxList, complete: boolean): void {
    runSteps(this.steps(sandboxes, complete, Number.POSITIVE_INFINITY));
  }

  /** The same in steps, yielding after every `slice` ids (the sort of an unsorted walk is one step). */
  *steps(sandboxes: SandboxList, complete: boolean, slice: number): Steps<void> {
    if (!complete) {
      this.baseline = false;
      return;
    }
    const counting = this.baseline ? 1 : 0;
    const { ids, templates } = yield* sortedWalk(sandboxes, slice);
    yield;
    this.walks++;
    // Both lists ascending: one merge finds the ids that came and went, without hashing.
    const prevIds = this.ids;
    const prevTemplates = this.templates;
    let a = 0;
    let b = 0;
    let left = slice;
    while (a < prevIds.length || b < ids.length) {
      if (--left === 0) {
        yield;
        left = slice;
      }
      const old = prevIds[a];
      const now = ids[b];
      if (now === undefined || (old !== undefined && old < now)) {
        touch(this.disappeared, prevTemplates[a] as string, counting);
        a++;
      } else if (old === undefined || now < old) {
        const t = templates[b] as string;
        touch(this.created, t, counting);
        touch(this.disappeared, t, 0);
        b++;
      } else {
        a++;
        b++;
      }
    }
    this.ids = ids;
    this.templates = templates;
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
      "Sandbox ids that vanished between two consecutive complete walks of GET /v2/sandboxes, by template; counted by the poller.",
    );
    for (const t of [...this.created.keys()].sort()) {
      const l = labels([["template", t]], guard);
      created.add(l, this.created.get(t) ?? 0);
      gone.add(l, this.disappeared.get(t) ?? 0);
    }
    return [created, gone];
  }
}

/** Adds `n` to a counter, creating it at 0 so the series exists before its first increment. */
function touch(m: Map<string, number>, key: string, n: number): void {
  m.set(key, (m.get(key) ?? 0) + n);
}

/**
 * The walk's ids in ascending order with their templates, each id once (its first record). A
 * compact table is in id order already, and then no sort runs; whole records (per-sandbox series
 * or policy on) keep walk order and are sorted here when the platform pages in another order.
 */
function* sortedWalk(
  sandboxes: SandboxList,
  slice: number,
): Steps<{ ids: string[]; templates: string[] }> {
  // Sized once: grown by push, 100,000 entries reallocate each list a dozen times.
  const walkIds = new Array<string>(sandboxes.length);
  const walkTemplates = new Array<string>(sandboxes.length);
  let sorted = true;
  let n = 0;
  yield* visitRows(
    sandboxes,
    (id, templateId) => {
      if (n > 0 && id <= (walkIds[n - 1] as string)) sorted = false;
      walkIds[n] = id;
      walkTemplates[n] = templateId;
      n++;
    },
    slice,
  );
  walkIds.length = n;
  walkTemplates.length = n;
  if (sorted) return { ids: walkIds, templates: walkTemplates };
  yield;
  // Equal ids keep walk order, so the first record of a repeated id comes first.
  const order = idOrder(walkIds);
  yield;
  const ids: string[] = [];
  const templates: string[] = [];
  for (const i of order) {
    const id = walkIds[i] as string;
    if (ids[ids.length - 1] === id) continue;
    ids.push(id);
    templates.push(walkTemplates[i] as string);
  }
  return { ids, templates };
}
