// The cost families in a prom-client registry, read from the accountant when scraped.
import { Counter, Gauge, type Registry } from "prom-client";
import type { CostAccountant } from "./cost-accountant.js";
import { DROP_REASONS } from "./cost-accountant.js";
import type { CostSettings } from "./cost-settings.js";

/** What the families need besides the accountant. */
export interface CostFamiliesOptions {
  registry: Registry;
  ns: string;
  settings: CostSettings;
  /** Guards a platform value before it becomes a label (cut, scrubbed). */
  label: (value: string) => string;
}

/** Label value of the spend of attribution values past the top N. */
export const OTHER_VALUE = "other";

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
      for (const t of a.usage()) {
        this.inc({ template: label(t.template), state: "running" }, t.running.vcpuSeconds);
        this.inc({ template: label(t.template), state: "paused" }, t.paused.vcpuSeconds);
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
      for (const t of a.usage()) {
        this.inc({ template: label(t.template), state: "running" }, t.running.gibSeconds);
        this.inc({ template: label(t.template), state: "paused" }, t.paused.gibSeconds);
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
      for (const t of a.usage()) {
        const p = t.prices;
        const template = label(t.template);
        const run = t.running.vcpuSeconds * p.vcpuSecond + t.running.gibSeconds * p.memoryGiBSecond;
        this.inc({ template, state: "running", currency }, run);
        this.inc({ template, state: "paused", currency }, t.paused.gibSeconds * p.pausedGiBSecond);
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
    help: "Inputs the cost accounting left out, by reason: bad_resources (negative or absurd cpuCount/memoryMB), future_start, future_event, time_backwards (a walk older than the last), unknown_sandbox (a policy action on a sandbox not tracked).",
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
