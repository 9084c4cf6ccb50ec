// The cost families in a prom-client registry, read from the accountant when scraped. A value that
// is not finite (spend overflowed) leaves out its series, counted, never the scrape.
import { Counter, Gauge, type LabelValues, type Registry } from "prom-client";
import {
  counter,
  type FamilyDescriptor,
  gauge,
  metricOptions,
  setting,
  TEAM_LABEL,
} from "../exposition/descriptor.js";
import type { CostAccountant } from "./cost-accountant.js";
import { DROP_REASONS } from "./cost-inputs.js";
import type { CostSettings } from "./cost-settings.js";
import { NONE, type TemplateUsage } from "./spend-totals.js";

/** What the families need besides the accountant. */
export interface CostFamiliesOptions {
  registry: Registry;
  ns: string;
  /** The settings in use, read at each scrape (a reload may change prices, budget, the cap). */
  settings: () => CostSettings;
  /** Guards a platform value before it becomes a label (cut, scrubbed). */
  label: (value: string) => string;
  /** Templates with series of their own (metrics.maxEventTemplates); the rest count as `other`. */
  maxTemplates: number;
  /** Counts a series of `family` left out for a NaN or +-Inf value. */
  nonFinite: (family: string) => void;
}

/** Label value of the spend of attribution values past the top N, and of templates past the cap. */
export const OTHER_VALUE = "other";

/** The team a cost family's series carry when teams are discovered. */
const DISCOVERED_TEAM = { name: "team", with: setting("platform.discoverTeams") };

const ON = { on: setting("cost.enabled") };

export const VCPU_SECONDS = counter(
  "vcpu_seconds_total",
  "vCPU-seconds allocated to sandboxes, by template and state (running, paused); integrated on the platform's times: startedAt from GET /sandboxes, the end from the killed/paused lifecycle event's execution, else endAt, else midway between walks.",
  ["template", "state", TEAM_LABEL],
  ON,
);
export const MEMORY_GIB_SECONDS = counter(
  "memory_gib_seconds_total",
  "GiB-seconds of RAM allocated to sandboxes, by template and state (running, paused); integrated like sandbox_vcpu_seconds_total.",
  ["template", "state", TEAM_LABEL],
  ON,
);
export const ESTIMATED_COST = counter(
  "estimated_cost_total",
  "Estimated spend on sandboxes, by template and state: running (vCPU x cost.prices.vcpuSecond + GiB x cost.prices.memoryGiBSecond) x seconds, paused GiB x cost.prices.pausedGiBSecond x seconds; each second at the prices in use when it was counted.",
  ["template", "state", "currency", TEAM_LABEL],
  ON,
);
export const ESTIMATED_COST_ATTRIBUTED = counter(
  "estimated_cost_attributed_total",
  `Estimated spend by metadata key (cost.attributeBy) and value: the first cost.maxAttributedValues values by spend keep their own series, the rest count as ${OTHER_VALUE}; ${NONE} is a sandbox without the key (or without metadata), so each key's values sum to the spend.`,
  ["key", "value", "currency"],
  ON,
);
export const POLICY_ESTIMATED_SAVINGS = counter(
  "policy_estimated_savings_total",
  "Running cost the policy avoided, by rule and mode: done, from each pause until the sandbox ran again, was killed or reached its endAt; dry_run, for the sandboxes a dry-run rule planned to pause, while they stayed idle.",
  ["rule", "mode", "currency"],
  ON,
);
export const COST_INPUTS_DROPPED = counter(
  "cost_inputs_dropped_total",
  "Inputs the cost accounting left out, by reason: bad_execution (a lifecycle event's execution that does not end at the event or lasts longer than a run can: clock skew, a zero time), bad_resources (negative or absurd cpuCount/memoryMB), missing_resources (a sandbox listed without cpuCount or memoryMB: no spend until they come; once per sandbox), future_start, future_event, time_backwards (a walk older than the last), unknown_sandbox (a policy action on a sandbox not tracked).",
  ["reason", DISCOVERED_TEAM],
  ON,
);
export const COST_PRICE = gauge(
  "cost_price",
  "The price table in use (cost.prices), per second of one unit: resource vcpu or memory (GiB), state running or paused; per-template overrides are not shown.",
  ["resource", "state", "currency", DISCOVERED_TEAM],
  ON,
);
export const COST_BUDGET = gauge(
  "cost_budget",
  "The spend budget (cost.budget.daily), by period, in the currency; absent when none is set.",
  ["period", "currency"],
  ON,
);
export const COST_FAMILIES = [
  VCPU_SECONDS,
  MEMORY_GIB_SECONDS,
  ESTIMATED_COST,
  ESTIMATED_COST_ATTRIBUTED,
  POLICY_ESTIMATED_SAVINGS,
  COST_INPUTS_DROPPED,
  COST_PRICE,
  COST_BUDGET,
] as const;

/** Usage summed under one template label. */
interface LabelledUsage {
  running: TemplateUsage;
  paused: TemplateUsage;
  /** Spend running and paused, each template at its own prices. */
  runningCost: number;
  pausedCost: number;
}

/**
 * The accountant's totals by template label: the first `max` templates seen keep their own, the
 * rest are summed as `other` (the order never changes, so no series ever goes back).
 */
function byTemplate(
  a: CostAccountant,
  max: number,
  label: (value: string) => string,
): Map<string, LabelledUsage> {
  const out = new Map<string, LabelledUsage>();
  let i = 0;
  for (const t of a.usage()) {
    const key = i++ < max ? label(t.template) : OTHER_VALUE;
    let u = out.get(key);
    if (!u) {
      u = {
        running: { vcpuSeconds: 0, gibSeconds: 0 },
        paused: { vcpuSeconds: 0, gibSeconds: 0 },
        runningCost: 0,
        pausedCost: 0,
      };
      out.set(key, u);
    }
    u.running.vcpuSeconds += t.running.vcpuSeconds;
    u.running.gibSeconds += t.running.gibSeconds;
    u.paused.vcpuSeconds += t.paused.vcpuSeconds;
    u.paused.gibSeconds += t.paused.gibSeconds;
    u.runningCost += t.runningCost;
    u.pausedCost += t.pausedCost;
  }
  return out;
}

/**
 * Registers the resource-second, spend, attribution, savings, price and budget families. Every
 * counter is recomputed from the accountant's running totals, so each only grows.
 */
export function registerCostFamilies(a: CostAccountant, o: CostFamiliesOptions): void {
  const { ns, label } = o;
  const registers = [o.registry];
  /** A counter set afresh at each scrape by `fill`, through `put`, which skips what is not finite. */
  const register = <L extends string>(
    d: FamilyDescriptor<"counter">,
    fill: (put: (labels: Record<L, string>, value: number) => void, s: CostSettings) => void,
  ): void => {
    const options = metricOptions<L>(ns, d);
    const { name } = options;
    new Counter({
      ...options,
      registers,
      collect() {
        this.reset();
        fill((labels, value) => {
          if (Number.isFinite(value)) this.inc(labels as LabelValues<L>, value);
          else o.nonFinite(name);
        }, o.settings());
      },
    });
  };
  const usage =
    (pick: (u: LabelledUsage, state: "running" | "paused") => number) =>
    (put: (labels: Record<"template" | "state", string>, value: number) => void): void => {
      for (const [template, u] of byTemplate(a, o.maxTemplates, label))
        for (const state of ["running", "paused"] as const)
          put({ template, state }, pick(u, state));
    };
  register(
    VCPU_SECONDS,
    usage((u, state) => u[state].vcpuSeconds),
  );
  register(
    MEMORY_GIB_SECONDS,
    usage((u, state) => u[state].gibSeconds),
  );
  register(ESTIMATED_COST, (put, s) => {
    for (const [template, u] of byTemplate(a, o.maxTemplates, label)) {
      put({ template, state: "running", currency: s.currency }, u.runningCost);
      put({ template, state: "paused", currency: s.currency }, u.pausedCost);
    }
  });
  // The values given a series of their own stay theirs: neither they nor `other` ever go back.
  const admitted = o.settings().attributeBy.map(() => new Set<string>());
  register(ESTIMATED_COST_ATTRIBUTED, (put, s) => putAttributed(a, admitted, label, put, s));
  register(POLICY_ESTIMATED_SAVINGS, (put, s) => {
    for (const v of a.savings()) put({ rule: v.rule, mode: v.mode, currency: s.currency }, v.cost);
  });
  register(COST_INPUTS_DROPPED, (put) => {
    const dropped = a.dropped();
    for (const reason of DROP_REASONS) put({ reason }, dropped.get(reason) ?? 0);
  });
  registerCostGauges(o);
}

/**
 * The attributed spend of each cost.attributeBy key: the values with a series of their own (the
 * first ones by spend, `admitted` for good), the rest summed as OTHER_VALUE.
 */
function putAttributed(
  a: CostAccountant,
  admitted: readonly Set<string>[],
  label: (value: string) => string,
  put: (labels: Record<"key" | "value" | "currency", string>, value: number) => void,
  s: CostSettings,
): void {
  s.attributeBy.forEach((key, i) => {
    const { values, overflow } = a.attribution(i);
    const mine = admitted[i] as Set<string>;
    if (mine.size < s.maxAttributedValues) {
      const ranked = [...values].filter(([v]) => !mine.has(v)).sort((x, y) => y[1] - x[1]);
      for (const [v] of ranked) {
        if (mine.size >= s.maxAttributedValues) break;
        mine.add(v);
      }
    }
    let other = overflow;
    for (const [v, cost] of values) {
      if (mine.has(v)) put({ key, value: label(v), currency: s.currency }, cost);
      else other += cost;
    }
    put({ key, value: OTHER_VALUE, currency: s.currency }, other);
  });
}

/** The price table and the budget in use, read from the settings at each scrape. */
function registerCostGauges(o: CostFamiliesOptions): void {
  const registers = [o.registry];
  new Gauge({
    ...metricOptions<"resource" | "state" | "currency">(o.ns, COST_PRICE),
    registers,
    collect() {
      this.reset();
      const { prices: p, currency } = o.settings();
      this.set({ resource: "vcpu", state: "running", currency }, p.vcpuSecond);
      this.set({ resource: "memory", state: "running", currency }, p.memoryGiBSecond);
      this.set({ resource: "vcpu", state: "paused", currency }, 0);
      this.set({ resource: "memory", state: "paused", currency }, p.pausedGiBSecond);
    },
  });
  new Gauge({
    ...metricOptions<"period" | "currency">(o.ns, COST_BUDGET),
    registers,
    collect() {
      this.reset();
      const { budget, currency } = o.settings();
      if (budget.daily !== undefined) this.set({ period: "daily", currency }, budget.daily);
    },
  });
}
