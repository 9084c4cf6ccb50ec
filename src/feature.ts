// The feature contract: what a feature folder gives the composition root (src/app.ts), and the
// shared services it is given. A feature reads its own settings slice; app.ts names none of them.
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import type { Snapshot } from "./collect/snapshot.js";
import type { Config } from "./config/schema.js";
import type { SecretName, SecretValues } from "./config/secret-files.js";
import type { ExporterMetrics } from "./metrics/exporter-metrics.js";
import type { EventLedger } from "./metrics/lifecycle-events.js";
import type { ControlClient } from "./platform/control/control.js";
import type { PlatformFacts } from "./platform/facts.js";
import type { PolicyHooks } from "./policy/executor.js";
import type { ListenerSecurity } from "./server/listener.js";
import type { Route } from "./server/routes.js";
import type { Clock } from "./util/clock.js";
import type { Secrets } from "./util/secrets.js";

/** Effects from outside that a feature may need (the ones startExporter was given). */
export interface Effects {
  logger: Logger;
  clock: Clock;
  /** Tests drive cycles and probes by hand: no schedule is started. */
  manual: boolean;
  /** Reads a UTF-8 file (the policy's rule file). */
  readFile: (path: string) => string;
  /** Control-channel dispatcher; default one honouring HTTP(S)_PROXY. */
  dispatcher?: Dispatcher;
}

/** What every feature shares: built once by app.ts before any feature starts. */
export interface Services extends Effects {
  readonly config: Config;
  /** The scrubber for every text that leaves the process. */
  readonly secrets: Secrets;
  /** Every secret file's content, read by one function (config/secret-files.ts). */
  readonly secretValues: SecretValues;
  /** The registry, the namespace and the poll's own families. */
  readonly metrics: ExporterMetrics;
  /** The management API client; a feature takes `control.withOwnNormalizer(name)`. */
  readonly control: ControlClient;
  /** What was learned of the platform as it ran: team id, concurrency limit. */
  readonly facts: PlatformFacts;
  /** Poll interval in ms (one tick of poll.schedule). */
  readonly pollIntervalMs: number;
  /**
   * The lifecycle event sink (the ledger where events arrive), as the features before this one
   * made it: a feature that counts events wraps it (cost); one that reads it (poll, webhook) takes it.
   */
  eventSink: EventLedger | undefined;
  /** The policy's hooks, added to by the features that follow its pauses (cost). */
  readonly policyHooks: PolicyHooks[];
  /** How the listener is secured at start. */
  readonly listener: ListenerSecurity;
  /** The latest snapshot the poll published (undefined before the first). */
  latest(): Snapshot | undefined;
}

/** What the poll must read for the features that are on (asked before anything starts). */
export interface Needs {
  /** The sandboxes' metadata (per-sandbox series, policy rules, cost attribution). */
  sandboxMetadata?: boolean;
  /** /health every tick, even off shard 0 (the policy's freshness check). */
  health?: boolean;
}

/** A feature that is on, checked before anything starts. */
export interface Prepared {
  readonly needs?: Needs;
  /** The policy's rules at start, for features that meter them (cost's savings series at 0). */
  readonly rules?: readonly { name: string; dryRun: boolean }[];
  start(services: Services, all: PreparedSet): Promise<Started> | Started;
}

/** Every feature prepared at start, by name: what one may ask of the others before starting. */
export interface PreparedSet {
  readonly needs: Needs;
  readonly rules: readonly { name: string; dryRun: boolean }[];
}

/** A started feature: what it adds to the exporter. Every member is optional. */
export interface Started {
  /** Its HTTP routes, declared once (src/server/routes.ts). */
  readonly routes?: readonly Route[];
  /** Its section of /status. */
  status?(): unknown;
  /** Called with each snapshot the poll publishes, after the poll's own families. */
  onSnapshot?(snapshot: Snapshot): void;
  /**
   * Checks what a reload would change (throws on a bad file, nothing changed yet) and returns the
   * call that puts it in use, run once every feature's check passed.
   */
  reload?(next: Config, ctx: ReloadContext): (() => void) | undefined;
  /** Stops acting on the platform, before the poll stops (the probe's sandbox is terminated). */
  halt?(): Promise<void>;
  /** Starts its schedule (not when manual). */
  begin?(): Promise<void>;
  /** Stops it; called in reverse order of the list. */
  stop?(): Promise<void>;
  /** Anything the feature exposes to tests and callers (the prober, the policy engine). */
  readonly exposed?: Record<string, unknown>;
}

/** What a reload gives each feature's check: the next listener, and its secret files on demand. */
export interface ReloadContext {
  /**
   * Reads one secret file of the next configuration (throws naming its setting on a bad one);
   * the value joins the scrubber before it is returned. Only what a feature applies is read.
   */
  secret(name: SecretName): string | undefined;
  listener: ListenerSecurity;
}

/** A feature folder's entry: one line of the list in app.ts. */
export interface Feature {
  readonly name: string;
  /** Reads and checks what it needs before anything starts (a bad file stops the start); undefined: off. */
  prepare(config: Config, effects: Effects): Prepared | undefined;
  /**
   * When it was off at start and a reload turns it on: what the exporter says (it takes a
   * restart); throwing refuses the whole reload with that message.
   */
  onReloadWhileOff?(next: Config, logger: Logger): void;
}
