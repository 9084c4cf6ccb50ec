// Churn counters: sandbox ids appearing and vanishing between consecutive complete walks.
import type { Sandbox } from "../platform/types.js";
import { Family, labels } from "./text.js";
import { WalkIndex, type WalkRecord } from "./walk-index.js";

interface Known extends WalkRecord {
  template: string;
}

/**
 * Counts, by template, ids that appeared or vanished between two consecutive complete walks, so
 * sandboxes living shorter than a scrape interval still show in rates. The first complete walk
 * and the first one after an incomplete walk only set the baseline: an incomplete list would
 * report every sandbox it missed as gone.
 */
export class ChurnTracker {
  private readonly known = new WalkIndex<Known>();
  private walks = 0;
  private baseline = false;
  private readonly created = new Map<string, number>();
  private readonly disappeared = new Map<string, number>();

  /** Feeds one walk of this shard's sandboxes. */
  observe(sandboxes: readonly Sandbox[], complete: boolean): void {
    if (!complete) {
      this.baseline = false;
      return;
    }
    const counting = this.baseline;
    const walk = this.known.begin();
    this.walks++;
    for (const s of sandboxes) {
      const k = this.known.find(s.id);
      if (k?.walk === walk) continue;
      if (k) {
        k.template = s.templateId;
        this.known.keep(k);
        continue;
      }
      this.known.keep({ id: s.id, walk: 0, pos: 0, template: s.templateId });
      touch(this.created, s.templateId, counting ? 1 : 0);
      touch(this.disappeared, s.templateId, 0);
    }
    this.known.end((k) => touch(this.disappeared, k.template, counting ? 1 : 0));
    this.baseline = true;
  }

  /** The two counter families; none before the first complete walk. */
  families(ns: string): Family[] {
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
      const l = labels([["template", t]]);
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
