// Capability learning: which collectors this platform does not serve (to us), and when each is
// asked again. Every optional collector goes through it.
import type { Clock } from "../util/clock.js";
import type { Outcome } from "./collector.js";
import type { CollectorName } from "./snapshot.js";

/** Settings of the capability memory. */
export interface CapabilityOptions {
  clock: Clock;
  /** How long an unsupported collector is left alone before it is asked again. */
  recheckMs: number;
  /** A collector was found unsupported (with the answer that said so), or supported again. */
  onSupport?: (
    collector: CollectorName,
    supported: boolean,
    error?: { code: string; message: string },
  ) => void;
}

/**
 * A collector whose endpoint answers 404, 405 or 403 before it ever succeeded is unsupported by
 * this platform (E2B has no /cluster/overview; /nodes is for admins): it is re-checked at a slow
 * interval instead of failing every tick. A success makes it supported again.
 */
export class Capabilities {
  /** Collectors found unsupported, and when each is read again. */
  private readonly unsupported = new Map<CollectorName, { recheckAt: number }>();
  /** Collectors that succeeded once: an error of theirs is a failure, never "unsupported". */
  private readonly supported = new Set<CollectorName>();

  constructor(private readonly o: CapabilityOptions) {}

  /** Whether `name` is currently taken for unsupported. */
  isUnsupported(name: CollectorName): boolean {
    return this.unsupported.has(name);
  }

  /** An unsupported collector is left alone until its re-check is due. */
  waiting(name: CollectorName): boolean {
    const u = this.unsupported.get(name);
    return u !== undefined && this.o.clock.now() < u.recheckAt;
  }

  /** `name` was answered (a walk that read, a usage batch answered): it is served. */
  answered(name: CollectorName): void {
    this.supported.add(name);
  }

  /** Learns from one outcome of `name` (see the class comment). */
  learn(name: CollectorName, outcome: Outcome<unknown>): void {
    const was = this.unsupported.has(name);
    if (outcome.ok) {
      this.supported.add(name);
      if (was) {
        this.unsupported.delete(name);
        this.o.onSupport?.(name, true);
      }
      return;
    }
    // E2B answers 401 on /nodes without an admin token: with a key the sandbox walk accepts, that
    // is the endpoint refusing us, not a bad key (which fails the walk too, and alerts there).
    const refusedToUs = outcome.refused === true && this.supported.has("sandboxes");
    if (!(outcome.unsupportedAnswer || refusedToUs) || this.supported.has(name)) return;
    this.unsupported.set(name, { recheckAt: this.o.clock.now() + this.o.recheckMs });
    if (!was) this.o.onSupport?.(name, false, outcome.error);
  }
}
