// What the exporter learns of the platform as it runs, held in one shared service that the
// collectors and families read: the team of the key (set, or named by a lifecycle event) and the
// team's concurrency limit (set, or named by a create's 429). Capabilities are learned per
// collector and travel in the snapshot (collect/capabilities.ts).

/** The settings the facts start from. */
export interface ConfiguredFacts {
  teamId?: string | undefined;
  teamConcurrencyLimit?: number | undefined;
}

/** Learned platform facts; one instance per exporter, owned by its shared services. */
export class PlatformFacts {
  private team: string | undefined;
  private limit: number | undefined;

  constructor(private readonly configured: ConfiguredFacts = {}) {}

  /** The team whose capacity is read: the setting, else the one the lifecycle events named. */
  teamId(): string | undefined {
    return this.configured.teamId ?? this.team;
  }

  /** The team the latest lifecycle event named. */
  learnedTeamId(): string | undefined {
    return this.team;
  }

  /** A lifecycle event named the key's team. */
  learnTeamId(id: string): void {
    this.team = id;
  }

  /** The limit the setting gives, if any. */
  configuredConcurrencyLimit(): number | undefined {
    return this.configured.teamConcurrencyLimit;
  }

  /** The limit the latest create's 429 named, if any did. */
  learnedConcurrencyLimit(): number | undefined {
    return this.limit;
  }

  /** A create's 429 named the team's concurrency limit (already checked to be in range). */
  learnConcurrencyLimit(limit: number): void {
    this.limit = limit;
  }
}
