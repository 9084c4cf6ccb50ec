// The cost families in a prom-client registry, read from the accountant when scraped.
import { Counter, Gauge, type Registry } from "prom-client";
import type { CostAccountant } from "./cost-accountant.js";
import { DROP_REASONS } from "./cost-inputs.js";
import type { CostSettings } from "./cost-settings.js";
import type { TemplateUsage } from "./spend-totals.js";

/** What the families need besides the accountant. */
export interface CostFamiliesOptions {
  registry: Registry;
  ns: string;
  settings: CostSettings;
  /** Guards a platform value before it becomes a label (cut, scrubbed). */
  label: (value: string) => string;
  /** Templates with series of their own (metrics.maxEventTemplates); the rest count as `other`. */
  maxTemplates: number;
}

/** Label value of the spend of attribution values past the top N, and of templates past the cap. */
export const OTHER_VALUE = "other";

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
    const p = t.prices;
    u.running.vcpuSeconds += t.running.vcpuSeconds;
    u.running.gibSeconds += t.running.gibSeconds;
    u.paused.vcpuSeconds += t.paused.vcpuSeconds;
    u.paused.gibSeconds += t.paused.gibSeconds;
    u.runningCost +=
      t.running.vcpuSeconds * p.vcpuSecond + t.running.gibSeconds * p.memoryGiBSecond;
    u.pausedCost += t.paused.gibSeconds * p.pausedGiBSecond;
  }
  return out;
}

/**
 * Registers the resource-second, spend, attribution, savings, price and budget families. Every
 * family is a counter recomputed from the accountant's running totals, so each only grows.
 */
export function registerCostFamilies(a: CostAccountant, o: CostFamiliesOptions): void {
  const { ns, settings, label } = o;
  const registers = [o.registry];
  const currency = settings.currency;
  new Counter({
    name: `${ns}_vcpu_seconds_total`,
    help: "vCPU-seconds allocated to sandboxes, by template and state (running, paused); integrated on the platform's times: startedAt from GET /sandboxes, the end from the killed/paused lifecycle event's execution, else endAt, else midway between walks.",
    labelNames: ["template", "state"],
    registers,
    collect() {
      this.reset();
      for (const [template, u] of byTemplate(a, o.maxTemplates, label)) {
        this.inc({ template, state: "running" }, u.running.vcpuSeconds);
        this.inc({ template, state: "paused" }, u.paused.vcpuSeconds);
      }
    },
  });
  new Counter({
    name: `${ns}_memory_gib_seconds_total`,
    help: "GiB-seconds of RAM allocated to sandboxes, by template and state (running, paused); integrated like sandbox_vcpu_seconds_total.",
    labelNames: ["template", "state"],
    registers,
    collect() {
      this.reset();
      for (const [template, u] of byTemplate(a, o.maxTemplates, label)) {
        this.inc({ template, state: "running" }, u.running.gibSeconds);
        this.inc({ template, state: "paused" }, u.paused.gibSeconds);
      }
    },
  });
  new Counter({
    name: `${ns}_estimated_cost_total`,
    help: "Estimated spend on sandboxes, by template and state: running (vCPU x cost.prices.vcpuSecond + GiB x cost.prices.memoryGiBSecond) x seconds, paused GiB x cost.prices.pausedGiBSecond x seconds.",
    labelNames: ["template", "state", "currency"],
    registers,
    collect() {
      this.reset();
      for (const [template, u] of byTemplate(a, o.maxTemplates, label)) {
        this.inc({ template, state: "running", currency }, u.runningCost);
        this.inc({ template, state: "paused", currency }, u.pausedCost);
      }
    },
  });
  // The values given a series of their own stay theirs: neither they nor `other` ever go back.
  const admitted = settings.attributeBy.map(() => new Set<string>());
  new Counter({
    name: `${ns}_estimated_cost_attributed_total`,
    help: `Estimated spend by metadata key (cost.attributeBy) and value: the first cost.maxAttributedValues values by spend keep their own series, the rest count as ${OTHER_VALUE}; none is a sandbox without the key.`,
    labelNames: ["key", "value", "currency"],
    registers,
    collect() {
      this.reset();
      settings.attributeBy.forEach((key, i) => {
        const { values, overflow } = a.attribution(i);
        const mine = admitted[i] as Set<string>;
        if (mine.size < settings.maxAttributedValues) {
          const ranked = [...values].filter(([v]) => !mine.has(v)).sort((x, y) => y[1] - x[1]);
          for (const [v] of ranked) {
            if (mine.size >= settings.maxAttributedValues) break;
            mine.add(v);
          }
        }
        let other = overflow;
        for (const [v, cost] of values) {
          if (mine.has(v)) this.inc({ key, value: label(v), currency }, cost);
          else other += cost;
        }
        this.inc({ key, value: OTHER_VALUE, currency }, other);
      });
    },
  });
  new Counter({
    name: `${ns}_policy_estimated_savings_total`,
    help: "Running cost the policy avoided, by rule and mode: done, from each pause until the sandbox ran again, was killed or reached its endAt; dry_run, for the sandboxes a dry-run rule planned to pause, while they stayed idle.",
    labelNames: ["rule", "mode", "currency"],
    registers,
    collect() {
      this.reset();
      for (const s of a.savings()) this.inc({ rule: s.rule, mode: s.mode, currency }, s.cost);
    },
  });
  new Counter({
    name: `${ns}_cost_inputs_dropped_total`,
    help: "Inputs the cost accounting left out, by reason: bad_execution (a lifecycle event's execution that does not end at the event or lasts longer than a run can: clock skew, a zero time), bad_resources (negative or absurd cpuCount/memoryMB), missing_resources (a sandbox listed without cpuCount or memoryMB: no spend until they come; once per sandbox), future_start, future_event, time_backwards (a walk older than the last), unknown_sandbox (a policy action on a sandbox not tracked).",
    labelNames: ["reason"],
    registers,
    collect() {
      this.reset();
      const dropped = a.dropped();
      for (const reason of DROP_REASONS) this.inc({ reason }, dropped.get(reason) ?? 0);
    },
  });
  const price = new Gauge({
    name: `${ns}_cost_price`,
    help: "The price table in use (cost.prices), per second of one unit: resource vcpu or memory (GiB), state running or paused; per-template overrides are not shown.",
    labelNames: ["resource", "state", "currency"],
    registers,
  });
  const p = settings.prices;
  price.set({ resource: "vcpu", state: "running", currency }, p.vcpuSecond);
  price.set({ resource: "memory", state: "running", currency }, p.memoryGiBSecond);
  price.set({ resource: "vcpu", state: "paused", currency }, 0);
  price.set({ resource: "memory", state: "paused", currency }, p.pausedGiBSecond);
  const budget = new Gauge({
    name: `${ns}_cost_budget`,
    help: "The spend budget (cost.budget.daily), by period, in the currency; absent when none is set.",
    labelNames: ["period", "currency"],
    registers,
  });
  if (settings.budget.daily !== undefined)
    budget.set({ period: "daily", currency }, settings.budget.daily);
}
