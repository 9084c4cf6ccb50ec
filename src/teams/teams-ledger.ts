// E2B's webhook with several teams: one route, each event passed to the ledger of the team it names
// (`sandboxTeamId`). An event of a team this exporter does not watch is not its to count: the route
// shows it to `otherShard` (result other_shard), never counts it as a duplicate.
import type { Ledger } from "../feature.js";
import type { EventLedger, FreshEventListener } from "../metrics/lifecycle-events.js";
import type { LifecycleEvent } from "../platform/events.js";

/** The teams' ledgers as one. */
export class TeamsLedger implements Ledger {
  /** `ledgers`: each watched team's ledger now, by team id (a reload adds and removes teams). */
  constructor(private readonly ledgers: () => ReadonlyMap<string, EventLedger>) {}

  private of(event: LifecycleEvent): EventLedger | undefined {
    return event.teamId === undefined ? undefined : this.ledgers().get(event.teamId);
  }

  owns(event: LifecycleEvent): boolean {
    return this.of(event) !== undefined;
  }

  accept(event: LifecycleEvent, via: "poll" | "webhook"): boolean {
    return this.of(event)?.accept(event, via) ?? false;
  }

  otherShard(event: LifecycleEvent): void {
    this.of(event)?.otherShard(event);
  }

  /**
   * The newest of the teams' horizons: an event older than any team's could be that team's
   * replay, so the route refuses it for all (none watched: nothing is refused as a replay).
   */
  horizon(): number {
    let newest = Number.NEGATIVE_INFINITY;
    for (const l of this.ledgers().values()) newest = Math.max(newest, l.horizon());
    return newest;
  }

  /** Each team's fresh events, of the teams watched now (a team added later is not followed). */
  onFresh(listener: FreshEventListener): void {
    for (const l of this.ledgers().values()) l.onFresh(listener);
  }
}
