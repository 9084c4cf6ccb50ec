// The `cost:` section of the configuration: the price table, currency, attribution and budget.
// The only place its defaults live; src/catalog.ts composes the slice and settles it.
import { z } from "zod";
import { bool, budget, int, list, text } from "../config/fields.js";
import { defineSlice, ENV_PREFIX } from "../config/slice.js";

/**
 * E2B's published usage rates, USD per second while a sandbox runs, on allocated vCPU and RAM
 * (e2b.dev/docs/faq/calculate-sandbox-price, e2b-dev/docs#330, read 2026-11-28: $0.000014 per
 * vCPU-second, $0.0000045 per GiB-second; paused and killed sandboxes are not billed).
 */
export const E2B_PRICES: Readonly<CostPrices> = Object.freeze({
  vcpuSecond: 0.000014,
  memoryGiBSecond: 0.0000045,
  pausedGiBSecond: 0,
});

/** Prices per second of one resource-unit, in `cost.currency`. */
export interface CostPrices {
  vcpuSecond: number;
  memoryGiBSecond: number;
  pausedGiBSecond: number;
}

/**
 * Highest price per unit-second accepted: 3.6 million an hour for one vCPU or GiB, past what any
 * platform charges in any currency (E2B: 0.000014 USD). A larger one overflows spend to Infinity.
 */
export const MAX_PRICE = 1000;
const PRICE_TEXT = `a price: a number from 0 to ${MAX_PRICE} (currency per unit-second)`;
const price = z
  .number({ error: PRICE_TEXT })
  .refine((n) => Number.isFinite(n) && n >= 0 && n <= MAX_PRICE, { error: PRICE_TEXT });
/** Metadata keys, each once: a key given twice would count its spend twice. */
const attributeKeys = list.superRefine((keys, ctx) => {
  const twice = keys.find((k, i) => keys.indexOf(k) !== i);
  if (twice !== undefined)
    ctx.addIssue({
      code: "custom",
      message: `distinct metadata keys ("${twice}" is given twice, which would count its spend twice)`,
    });
});
const PriceOverride = z.strictObject({
  vcpuSecond: price.optional(),
  memoryGiBSecond: price.optional(),
  pausedGiBSecond: price.optional(),
});

/** The slice as the schema parses it; `settleCost` fills what depends on the platform. */
export const CostSchema = z.strictObject({
  /** Default: on for platform.flavor e2b (E2B's rates), else on once running prices are given. */
  enabled: bool.optional(),
  prices: z
    .strictObject({
      vcpuSecond: price.optional(),
      memoryGiBSecond: price.optional(),
      pausedGiBSecond: price.optional(),
      /** Per template id (or alias), any of the three prices. */
      templates: z
        .record(text, PriceOverride, { error: "a mapping of template id to prices" })
        .default({}),
    })
    .prefault({}),
  currency: text.regex(/^[A-Za-z]{3}$/, { error: "an ISO 4217 code like USD" }).default("USD"),
  /** Metadata keys whose values get their own spend series (customer, user, ...). */
  attributeBy: attributeKeys.default([]),
  /** Values per key with their own series; the rest are summed as `other`. */
  maxAttributedValues: int(1, 1000).default(20),
  budget: z.strictObject({ daily: budget.optional() }).prefault({}),
});

/** The cost settings every other module receives. */
export interface CostSettings {
  enabled: boolean;
  prices: CostPrices & { templates: Readonly<Record<string, Partial<CostPrices>>> };
  currency: string;
  attributeBy: readonly string[];
  maxAttributedValues: number;
  budget: { daily?: number };
}

/** An issue `settleCost` reports (added to the schema's issues by the caller). */
export interface CostIssue {
  path: string[];
  message: string;
}

/**
 * Fills the flavor's defaults: E2B's rates on e2b; a self-hosted platform has no price list, so
 * cost stays off until its running prices are given, and turning it on without them is refused.
 */
export function settleCost(
  c: z.output<typeof CostSchema>,
  flavor: string,
  report: (issue: CostIssue) => void,
): CostSettings {
  const p = c.prices;
  const given = p.vcpuSecond !== undefined || p.memoryGiBSecond !== undefined;
  const base: CostPrices | undefined = flavor === "e2b" ? E2B_PRICES : given ? ZERO : undefined;
  if (c.enabled === true && base === undefined)
    report({
      path: ["cost", "prices", "vcpuSecond"],
      message:
        "prices for a self-hosted platform (cost.prices.vcpuSecond, cost.prices.memoryGiBSecond): it has no price list",
    });
  const resolved = base ?? ZERO;
  return {
    enabled: c.enabled ?? base !== undefined,
    prices: {
      vcpuSecond: p.vcpuSecond ?? resolved.vcpuSecond,
      memoryGiBSecond: p.memoryGiBSecond ?? resolved.memoryGiBSecond,
      pausedGiBSecond: p.pausedGiBSecond ?? resolved.pausedGiBSecond,
      templates: p.templates,
    },
    currency: c.currency.toUpperCase(),
    attributeBy: c.attributeBy,
    maxAttributedValues: c.maxAttributedValues,
    budget: c.budget.daily === undefined ? {} : { daily: c.budget.daily },
  };
}

/** A self-hosted platform's unset prices: only what was given is charged. */
const ZERO: Readonly<CostPrices> = { vcpuSecond: 0, memoryGiBSecond: 0, pausedGiBSecond: 0 };

const X = ENV_PREFIX;

/** The `cost:` slice: its fields are CostSchema's; `settleCost` runs once the config is parsed. */
export const costSlice = defineSlice({
  key: "cost",
  fields: CostSchema.shape,
  settings: [
    {
      path: "cost.enabled",
      env: `${X}COST`,
      flag: "cost",
      negatable: true,
      kind: "bool",
      help: "estimate spend and policy savings (a running price given turns it on, on any flavor)",
      doc: "estimate spend and policy savings ([cost.md](cost.md)); a running price given turns it on, on any flavor. On a self-hosted platform without `cost.prices.vcpuSecond` or `cost.prices.memoryGiBSecond`, `--cost` stops the start (exit 2)",
    },
    {
      path: "cost.prices.vcpuSecond",
      env: `${X}COST_VCPU_SECOND`,
      flag: "cost-vcpu-second",
      kind: "number",
      help: "price of one vCPU-second running, in cost.currency (E2B's rate on e2b)",
      doc: "price of one vCPU-second running, in `cost.currency` (E2B's rate on e2b; a number from 0 to 1000, as every price; a reload applies prices from then on)",
      shownDefault: "unset",
    },
    {
      path: "cost.prices.memoryGiBSecond",
      env: `${X}COST_MEMORY_GIB_SECOND`,
      flag: "cost-memory-gib-second",
      kind: "number",
      help: "price of one GiB-second of RAM running (E2B's rate on e2b)",
      shownDefault: "unset",
    },
    {
      path: "cost.prices.pausedGiBSecond",
      env: `${X}COST_PAUSED_GIB_SECOND`,
      flag: "cost-paused-gib-second",
      kind: "number",
      help: "price of one GiB-second of RAM paused (E2B: 0, paused sandboxes are not billed)",
    },
    {
      path: "cost.currency",
      env: `${X}COST_CURRENCY`,
      flag: "cost-currency",
      kind: "string",
      help: "currency label of the prices and spend (ISO 4217)",
      doc: "the `currency` label of prices and spend (a three-letter ISO 4217 code)",
    },
    {
      path: "cost.attributeBy",
      env: `${X}COST_ATTRIBUTE_BY`,
      flag: "cost-attribute-by",
      repeatable: true,
      kind: "list",
      help: "metadata key whose values get their own spend series (repeat the flag, or a comma list)",
      doc: "metadata keys whose values get their own spend series (repeat the flag, or a comma list; each key once); the walk then keeps metadata (no compact table)",
    },
    {
      path: "cost.maxAttributedValues",
      env: `${X}COST_MAX_ATTRIBUTED_VALUES`,
      flag: "cost-max-attributed-values",
      kind: "int",
      help: "values per attribution key with their own series; the rest count as other",
      doc: "values per attribution key with a series of their own (1–1,000); the rest count as `other`",
    },
    {
      path: "cost.budget.daily",
      env: `${X}COST_BUDGET_DAILY`,
      flag: "cost-budget-daily",
      kind: "number",
      help: "daily spend budget, in cost.currency (exported for the forecast alert)",
      doc: 'daily spend budget in `cost.currency`: `sandbox_cost_budget{period="daily"}`, for the `SandboxSpendForecastOverBudget` alert',
    },
  ],
});

declare module "../config/settings.js" {
  interface Settings {
    cost: CostSettings;
  }
}
