// The fleet churn of the demo and `npm run simulator --churn-ms`: as a platform's users do, every
// tick one running sandbox of the fleet is killed and one created. The fleet is what the simulator
// generated and what the churn created: a sandbox created through the API (an exporter's probe) is
// its creator's to end, so the churn never kills it mid-probe.
import { pickMetadata } from "./generate.js";
import { deriveSeed, Prng } from "./prng.js";
import type { SimState } from "./state.js";

/** One kill and one create per tick; every `orphanedOneIn`th kill is `orphaned`, the rest `request`. */
export interface FleetChurn {
  everyMs: number;
  /** Unset (the default): every kill is `request`, one nobody is alerted about. */
  orphanedOneIn?: number;
}

/** The churn's fleet and one tick of it, without a timer: what startChurn runs every `everyMs`. */
export class Churn {
  private readonly rng: Prng;
  private readonly fleet: Set<string>;
  private kills = 0;

  constructor(
    private readonly state: SimState,
    private readonly churn: FleetChurn,
    seed: number,
  ) {
    this.rng = new Prng(deriveSeed(seed, "churn"));
    this.fleet = new Set(state.sandboxes.keys());
  }

  /** Kills one running sandbox of the fleet (if any) and creates one with fleet-like metadata. */
  tick(): void {
    // Ended otherwise (a timeout, an API kill): no longer the churn's.
    for (const id of this.fleet) if (!this.state.sandboxes.has(id)) this.fleet.delete(id);
    const running = this.state
      .startOrder()
      .filter((s) => s.state === "running" && this.fleet.has(s.sandboxID));
    const victim = running[Math.floor(this.rng.next() * running.length)];
    if (victim) {
      this.kills++;
      const every = this.churn.orphanedOneIn;
      const orphaned = every !== undefined && this.kills % every === 0;
      this.state.removeSandbox(victim.sandboxID, orphaned ? "orphaned" : "request");
      this.fleet.delete(victim.sandboxID);
    }
    // Metadata as the generated fleet's: the policy's candidates are replaced, not drained.
    const added = this.state.addSandbox({ metadata: pickMetadata(this.rng) });
    this.fleet.add(added.sandboxID);
  }
}

/** Starts the churn's timer; returns what stops it. */
export function startChurn(state: SimState, churn: FleetChurn, seed: number): () => void {
  const c = new Churn(state, churn, seed);
  const timer = setInterval(() => c.tick(), churn.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
