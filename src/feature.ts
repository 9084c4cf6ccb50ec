// The feature contract: what a feature folder gives the composition root (src/app.ts), and the
// shared services it is given. A feature reads its own settings slice; app.ts names none of them.
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import type { TickCollector } from "./collect/collector.js";
import type { Snapshot } from "./collect/snapshot.js";
import type { SecretName, SecretValues } from "./config/secret-files.js";
import type { Config } from "./config/settings.js";
import type { FamilyDescriptor } from "./exposition/descriptor.js";
import type { ExporterMetrics } from "./metrics/exporter-metrics.js";
import type { ControlClient } from "./platform/control/control.js";
import type { LifecycleEvent, LifecycleEventSink } from "./platform/events.js";
import type { PlatformFacts } from "./platform/facts.js";
import type { Clock } from "./util/clock.js";
import { ExporterError } from "./util/errors.js";
import type { Route } from "./util/route.js";
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
  /** The tick collectors the catalog lists (src/catalog.ts): the poll runs them, the metrics render them. */
  readonly collectors: readonly TickCollector[];
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
   * The lifecycle event ledger, where events arrive (the events collector, the webhook): built when
   * poll.events is on or a feature needs it (Needs.ledger). A feature that counts fresh events
   * subscribes (`ledger.onFresh`), whichever feature feeds it and in whatever order they start.
   */
  readonly ledger: Ledger | undefined;
  /** The policy's observers: a feature that follows its pauses (cost) adds its hooks at start. */
  readonly policyHooks: PolicyHooks[];
  /** How the listener is secured at start, as a feature sees it. */
  readonly listener: ListenerAccess;
  /** The latest snapshot the poll published (undefined before the first). */
  latest(): Snapshot | undefined;
}

/**
 * What the features use of the event ledger: the EventLedger, or with several teams the router
 * that passes each event to its team's (src/teams/teams-ledger.ts).
 */
export interface Ledger extends LifecycleEventSink {
  /** The oldest event time whose id is still remembered: an older event may be a replay. */
  horizon(): number;
  /** Subscribes to each event new to the ledger, whichever way it came. */
  onFresh(listener: (event: LifecycleEvent) => void): void;
}

/** What the poll must read for the features that are on (asked before anything starts). */
export interface Needs {
  /** The sandboxes' metadata (per-sandbox series, policy rules, cost attribution). */
  sandboxMetadata?: boolean;
  /** /health every tick, even off shard 0 (the policy's freshness check). */
  health?: boolean;
  /** The lifecycle event ledger, even with poll.events off (the webhook feeds it). */
  ledger?: boolean;
  /** The storage inventory (snapshots and their facts), even with poll.storage off (retention). */
  storage?: boolean;
}

/** A feature started without a service its Needs asked for: a wiring bug, not a setting. */
export class MissingServiceError extends ExporterError {
  constructor(feature: string, need: keyof Needs) {
    super("ERR_MISSING_SERVICE", `${feature} started without the ${need} its needs declared`);
  }
}

/** How the listener is secured, as a feature sees it. */
export interface ListenerAccess {
  /** Every request must carry credentials (basic auth or a bearer token). */
  readonly asksForCredentials: boolean;
}

/** A policy decision as a feature that follows the policy sees it. */
export interface PolicyAct {
  readonly rule: string;
  readonly action: string;
  readonly sandboxId: string;
}

/** What the policy engine tells the features that follow its actions and plans (cost's savings). */
export interface PolicyHooks {
  /** An "act" decision done, or planned by a dry-run rule, at `at`. */
  onApplied(decision: PolicyAct, result: "done" | "dry_run", at: number): void;
  /** A run's decisions at `at`: every (rule, sandbox) the rules still hold (pending, acted, skipped). */
  onPlan(at: number, decisions: readonly PolicyAct[]): void;
}

/**
 * What started features expose to the composition root, by key. Empty here: a feature that exposes
 * something adds its entry from its own file (`declare module "../feature.js" { interface
 * Exposed {...} }`), so this contract names no feature.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by module augmentation, as TickData is.
export interface Exposed {}

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
  /** Resolves when the work the last snapshot started has ended (a manual cycle waits for it). */
  idle?(): Promise<void>;
  /** What it exposes to tests and callers (the prober, the policy engine), by its Exposed key. */
  readonly exposes?: Partial<Exposed>;
}

/** What a reload gives each feature's check: the next listener, and its secret files on demand. */
export interface ReloadContext {
  /**
   * Reads one secret file of the next configuration (throws naming its setting on a bad one);
   * the value joins the scrubber before it is returned. Only what a feature applies is read.
   */
  secret(name: SecretName): string | undefined;
  listener: ListenerAccess;
}

/** A feature folder's entry: one line of the list of features. */
export interface Feature {
  readonly name: string;
  /**
   * With several teams (platform.teams): `each` starts it once per team, with that team's services
   * (its series get the team's label, its section of /status is the team's); default once, with
   * the exporter's services and the first team's client.
   */
  readonly perTeam?: "each";
  /** The metric families it writes, as descriptors: the catalog lists them, the reference is written from them. */
  readonly declares?: readonly FamilyDescriptor[];
  /** Reads and checks what it needs before anything starts (a bad file stops the start); undefined: off. */
  prepare(config: Config, effects: Effects): Prepared | undefined;
  /**
   * When it was off at start and a reload turns it on: what the exporter says (it takes a
   * restart); throwing refuses the whole reload with that message.
   */
  onReloadWhileOff?(next: Config, logger: Logger): void;
}
