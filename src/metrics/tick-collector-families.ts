// The tick collectors' families (exported by shard 0 only): each collector declares its own
// (`families` in its file); this renders them from a snapshot in the registry's order.
import { Registry } from "prom-client";
import type { FamilyUpdater, TickCollector } from "../collect/collector.js";
import type { Snapshot, TickData, TickName } from "../collect/snapshot.js";
import type { Family } from "../exposition/text.js";
import { noGuard } from "../exposition/value-guard.js";

/** Renders every tick collector's families; each keeps what it remembers across snapshots. */
export class TickCollectorFamilies {
  private readonly updaters: ReadonlyArray<readonly [TickName, FamilyUpdater<unknown>]>;

  constructor(
    ns: string,
    collectors: readonly TickCollector[],
    registry: Registry = new Registry(),
  ) {
    const out: Array<readonly [TickName, FamilyUpdater<unknown>]> = [];
    for (const c of collectors) {
      const update = c.families?.({ ns, registry });
      if (update) out.push([c.name, update as FamilyUpdater<unknown>]);
    }
    this.updaters = out;
  }

  /** Families of one snapshot, and the fields left out because their metric name was taken. */
  render(s: Snapshot, guard = noGuard()): { families: Family[]; skipped: string[] } {
    const families: Family[] = [];
    const skipped: string[] = [];
    const view = { snapshot: s, guard, skipped: (f: string) => skipped.push(f) };
    for (const [name, update] of this.updaters) {
      const data: TickData[TickName] | undefined = s[name];
      if (data !== undefined) families.push(...update(data, view));
    }
    return { families, skipped };
  }
}
