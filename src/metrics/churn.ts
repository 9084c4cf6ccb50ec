// Churn counters: sandbox ids appearing and vanishing between consecutive complete walks.
import type { Sandbox } from "../platform/types.js";
import { Family, labels } from "./text.js";

/**
 * Counts, by template, ids that appeared or vanished between two consecutive complete walks, so
 * sandboxes living shorter than a scrape interval still show in rates. The first complete walk
 * and the first one after an incomplete walk only set the baseline: an incomplete list would
 * report every sandbox it missed as gone.
 */
export class ChurnTracker {
  /** id -> template of the last complete walk; plain strings, so 100,000 ids cost a few MB. */
  private known = new Map<string, string>();
  private walks = 0;
  private baseline = false;
  private readonly created = new Map<string, number>();
  private readonly disappeared = new Map<string, number>();

  /** Feeds one walk of this shard's sandboxes. */
  observe(sandboxes: Iterable<Sandbox>, complete: boolean): void {
    if (!complete) {
      this.baseline = false;
      return;
    }
    const counting = this.baseline;
    const known = this.known;
    const next = new Map<string, string>();
    this.walks++;
    for (const s of sandboxes) {
      if (next.has(s.id)) continue;
      next.set(s.id, s.templateId);
      if (known.has(s.id)) continue;
      touch(this.created, s.templateId, counting ? 1 : 0);
      touch(this.disappeared, s.templateId, 0);
    }
    for (const [id, template] of known)
      if (!next.has(id)) touch(this.disappeared, template, counting ? 1 : 0);
    this.known = next;
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
