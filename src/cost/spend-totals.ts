// Where counted time goes: resource-seconds by template and state, and spend by attribution value
// (cost.attributeBy). Read by the cost families when scraped; only grows.
import type { CostPrices, CostSettings } from "./cost-settings.js";

/** Attribution values remembered per key; past it new values count as `other` at once. */
const MAX_HELD_VALUES = 10_000;
export const MIB_PER_GIB = 1024;
/** The attribution value of a sandbox without the key (or without any metadata). */
export const NONE = "none";

/** Resource-seconds of one template in one state. */
export interface TemplateUsage {
  vcpuSeconds: number;
  gibSeconds: number;
}

/** Totals of one template: running and paused. */
export interface TemplateTotals {
  template: string;
  /** The prices in use now (a reload may change them). */
  prices: CostPrices;
  running: TemplateUsage;
  paused: TemplateUsage;
  /** Spend running and paused, each second at the prices in use when it was counted. */
  runningCost: number;
  pausedCost: number;
}

/** Running totals by template (each known by a small index) and by attribution value. */
export class SpendTotals {
  private readonly index = new Map<string, number>();
  private readonly templates: TemplateTotals[] = [];
  /** Per attributeBy key: value -> spend; values past MAX_HELD_VALUES go to `overflow`. */
  private readonly attributed: Map<string, number>[];
  private readonly overflow: number[];
  /** The attribution of a sandbox no record or event gave metadata: `none` for every key. */
  private readonly none: readonly string[];

  constructor(
    private prices: CostSettings["prices"],
    private readonly attributeBy: readonly string[],
  ) {
    this.attributed = attributeBy.map(() => new Map());
    this.overflow = attributeBy.map(() => 0);
    this.none = attributeBy.map(() => NONE);
  }

  /** New prices from now on: what was counted keeps its cost, so no total goes down. */
  setPrices(prices: CostSettings["prices"]): void {
    this.prices = prices;
    for (const t of this.templates) t.prices = this.pricesFor(t.template);
  }

  private pricesFor(template: string): CostPrices {
    const o = this.prices.templates[template];
    return {
      vcpuSecond: o?.vcpuSecond ?? this.prices.vcpuSecond,
      memoryGiBSecond: o?.memoryGiBSecond ?? this.prices.memoryGiBSecond,
      pausedGiBSecond: o?.pausedGiBSecond ?? this.prices.pausedGiBSecond,
    };
  }

  /** The index of the template's totals, made on first sight with its prices. */
  templateOf(template: string): number {
    let i = this.index.get(template);
    if (i === undefined) {
      i = this.templates.length;
      this.templates.push({
        template,
        prices: this.pricesFor(template),
        running: { vcpuSeconds: 0, gibSeconds: 0 },
        paused: { vcpuSeconds: 0, gibSeconds: 0 },
        runningCost: 0,
        pausedCost: 0,
      });
      this.index.set(template, i);
    }
    return i;
  }

  /** The prices of the template at `template` (an index from templateOf). */
  pricesOf(template: number): CostPrices {
    return (this.templates[template] as TemplateTotals).prices;
  }

  /**
   * Adds `ms` running (else paused) of `cpu` vCPUs and `memMB` to a template and attribution;
   * `attr` undefined (no metadata came) counts as `none` for every key.
   */
  add(
    template: number,
    running: boolean,
    cpu: number,
    memMB: number,
    ms: number,
    attr: readonly string[] | undefined,
  ): void {
    const s = ms / 1000;
    const gib = memMB / MIB_PER_GIB;
    const totals = this.templates[template] as TemplateTotals;
    const p = totals.prices;
    const use = running ? totals.running : totals.paused;
    use.vcpuSeconds += cpu * s;
    use.gibSeconds += gib * s;
    const cost = running
      ? (cpu * p.vcpuSecond + gib * p.memoryGiBSecond) * s
      : gib * p.pausedGiBSecond * s;
    if (running) totals.runningCost += cost;
    else totals.pausedCost += cost;
    const keys = attr ?? this.none;
    for (let i = 0; i < keys.length; i++) {
      const values = this.attributed[i] as Map<string, number>;
      const v = keys[i] as string;
      const before = values.get(v);
      if (before !== undefined) values.set(v, before + cost);
      else if (values.size < MAX_HELD_VALUES) values.set(v, cost);
      else this.overflow[i] = (this.overflow[i] ?? 0) + cost;
    }
  }

  /** The attribution values of a sandbox's metadata, one per attributeBy key. */
  attrOf(metadata: Readonly<Record<string, string>>): string[] {
    return this.attributeBy.map((k) => metadata[k] ?? NONE);
  }

  /** Resource-seconds by template. */
  usage(): Iterable<Readonly<TemplateTotals>> {
    return this.templates;
  }

  /** Spend per value of the i-th attributeBy key, and what counted as other at once. */
  attribution(i: number): { values: ReadonlyMap<string, number>; overflow: number } {
    return { values: this.attributed[i] ?? new Map(), overflow: this.overflow[i] ?? 0 };
  }
}
