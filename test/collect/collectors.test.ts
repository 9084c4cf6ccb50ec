import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { COLLECTOR_SLICES, ConfigSchema, TICK_COLLECTORS } from "../../src/catalog.js";
import { optedIn, type TickCollector } from "../../src/collect/collector.js";
import { Family } from "../../src/exposition/text.js";
import { TickCollectorFamilies } from "../../src/metrics/tick-collector-families.js";
import { pollSettings } from "../helpers/poller.js";
import { snapshot } from "../metrics/fixtures.js";

describe("collector registry", () => {
  it("names each opt-in collector's setting among its own slice's fields, off by default", () => {
    const defaults = ConfigSchema.parse({}).poll;
    const optIns = TICK_COLLECTORS.filter((c) => c.optIn !== undefined);
    expect(optIns.map((c) => c.name)).toEqual(
      expect.arrayContaining(["templateBuilds", "events", "teamMetrics"]),
    );
    for (const c of optIns) {
      expect(Object.keys(c.settings?.fields ?? {})).toContain(c.optIn);
      expect(c.settings?.key).toBe("poll");
      expect(defaults[c.optIn as keyof typeof defaults]).toBe(false);
    }
  });

  it("hands every collector's slice to the config, once", () => {
    const own = TICK_COLLECTORS.flatMap((c) => (c.settings ? [c.settings] : []));
    expect(COLLECTOR_SLICES).toEqual(own);
    expect(new Set(COLLECTOR_SLICES).size).toBe(COLLECTOR_SLICES.length);
  });

  it("turns on the opt-in collectors whose setting is on in the poll settings, and no other", () => {
    expect(optedIn(TICK_COLLECTORS, pollSettings())).toEqual(new Set());
    expect(
      optedIn(TICK_COLLECTORS, pollSettings({ templateBuilds: true, teamMetrics: true })),
    ).toEqual(new Set(["templateBuilds", "teamMetrics"]));
  });

  it("renders a collector's families from its own declaration, with its data of the snapshot", () => {
    const health = TICK_COLLECTORS.find((c) => c.name === "health") as TickCollector<"health">;
    const seen: unknown[] = [];
    const custom: TickCollector<"health"> = {
      ...health,
      families: ({ ns, registry }) => {
        expect(registry).toBeInstanceOf(Registry);
        return (data) => {
          seen.push(data);
          return [new Family(`${ns}_custom`, "counter", "A custom counter.").add("", 2)];
        };
      },
    };
    const s = snapshot({ health: { up: true } });
    const { families } = new TickCollectorFamilies("x", [custom], new Registry()).render(s);
    expect(seen).toEqual([{ up: true }]);
    expect(families.map((f) => f.render("prometheus")).join("")).toContain("x_custom_total 2");
  });
});
