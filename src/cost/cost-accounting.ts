// The cost accounting that cost-feature.ts wires: settings in, three inputs (walked snapshots, the
// ledger's fresh events, policy pauses), families out. Everything else stays in this folder.
import type { Registry } from "prom-client";
import { SandboxTable } from "../collect/sandbox-table.js";
import type { Snapshot } from "../collect/snapshot.js";
import { ValueGuard } from "../exposition/value-guard.js";
import type { PolicyAct, PolicyHooks } from "../feature.js";
import type { FreshEventListener } from "../metrics/lifecycle-events.js";
import type { LifecycleEvent } from "../platform/events.js";
import type { Sandbox } from "../platform/types.js";
import type { Clock } from "../util/clock.js";
import { inShard } from "../util/shard.js";
import { CostAccountant } from "./cost-accountant.js";
import { registerCostFamilies } from "./cost-families.js";
import type { WalkRowVisitor } from "./cost-inputs.js";
import { checkCostReload } from "./cost-reload.js";
import type { CostSettings } from "./cost-settings.js";

/** What the cost accounting reads of a snapshot. */
export type WalkedSnapshot = Pick<
  Snapshot,
  "walked" | "sandboxesComplete" | "sandboxes" | "startedAt"
>;

/** What the cost accounting is given. */
export interface CostAccountingDeps {
  settings: CostSettings;
  registry: Registry;
  namespace: string;
  clock: Clock;
  shard: { index: number; total: number };
  states: { running: readonly string[]; paused: readonly string[] };
  maxLabelValueLength: number;
  /** Templates with cost series of their own (metrics.maxEventTemplates); the rest are `other`. */
  maxTemplates: number;
  scrub: (text: string) => string;
  /** The policy's rules at start: their savings series exist at 0 from the first scrape. */
  rules?: readonly { name: string; dryRun: boolean }[];
  /** Counts a series of `family` left out of a scrape for a NaN or +-Inf value. */
  nonFinite?: (family: string) => void;
}

/** Where fresh lifecycle events are told (the event ledger). */
export interface FreshEventSource {
  onFresh(listener: FreshEventListener): void;
}

/** The cost accounting's inputs; its outputs are the families it registered. */
export interface CostAccounting {
  /** Call with every snapshot the poller publishes; complete walks are accounted. */
  onSnapshot(snapshot: WalkedSnapshot): void;
  /** Accounts each event the ledger counts as new (own shard only), from now on. */
  follow(ledger: FreshEventSource): void;
  /** For the policy engine: pauses done and planned, and each run's plan. */
  readonly policy: PolicyHooks;
  readonly accountant: CostAccountant;
  /**
   * Checks the cost settings of a reload (throws CostRestartError naming one that takes a
   * restart) and returns the call that puts the rest in use.
   */
  reload(next: CostSettings): () => void;
}

/** Builds the cost accounting and registers its families; undefined when cost.enabled is off. */
export function startCost(d: CostAccountingDeps): CostAccounting | undefined {
  if (!d.settings.enabled) return undefined;
  const accountant = new CostAccountant({
    prices: d.settings.prices,
    attributeBy: d.settings.attributeBy,
    runningStates: d.states.running,
    pausedStates: d.states.paused,
    // Time before the process started is not counted: a restart is a counter reset, not a guess.
    origin: d.clock.now(),
    clock: d.clock,
    // Late-event corrections cost 24 bytes a sandbox: kept once an event source is wired.
    events: false,
  });
  const guard = new ValueGuard(d.maxLabelValueLength, d.scrub);
  let settings = d.settings;
  registerCostFamilies(accountant, {
    registry: d.registry,
    ns: d.namespace,
    settings: () => settings,
    label: (v) => guard.label(v),
    maxTemplates: d.maxTemplates,
    nonFinite: d.nonFinite ?? (() => undefined),
  });
  for (const r of d.rules ?? []) accountant.declareRule(r.name, r.dryRun ? "dry_run" : "done");
  const own = (e: LifecycleEvent): boolean => inShard(e.sandboxId, d.shard.index, d.shard.total);
  return {
    accountant,
    reload(next) {
      checkCostReload(settings, next);
      return () => {
        settings = next;
        accountant.setPrices(next.prices);
      };
    },
    onSnapshot(snapshot) {
      // A partial walk would read as sandboxes gone: only complete ones are accounted.
      if (!snapshot.walked || !snapshot.sandboxesComplete || !snapshot.sandboxes) return;
      const list = snapshot.sandboxes;
      if (list instanceof SandboxTable) accountant.observeTable(snapshot.startedAt, list.rows());
      else
        accountant.observeRows(snapshot.startedAt, (visit) => visitRows(list, visit), list.length);
    },
    follow(ledger) {
      accountant.expectEvents();
      ledger.onFresh((event) => {
        if (own(event)) accountant.observeEvent(event);
      });
    },
    policy: {
      onApplied(decision, result, at) {
        if (decision.action !== "pause") return;
        if (result === "done" || result === "dry_run")
          accountant.policyPause(decision.rule, decision.sandboxId, result, at);
      },
      onPlan(at, decisions) {
        const planned = new Set(decisions.map((x: PolicyAct) => `${x.rule}\0${x.sandboxId}`));
        accountant.policyRun(at, (rule, id) => planned.has(`${rule}\0${id}`));
      },
    },
  };
}

/** Every record of a walk as arguments. */
function visitRows(list: Iterable<Sandbox>, visit: WalkRowVisitor): void {
  for (const s of list)
    visit(s.id, s.templateId, s.state, s.cpuCount, s.memoryMB, s.startedAt, s.endAt, s.metadata);
}
