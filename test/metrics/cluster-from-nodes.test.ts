// Where the platform serves no /cluster/overview (E2B), the cluster capacity families come from
// the nodes, under the names the overview gives them, so the dashboards and capacity rules work.
import { afterEach, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import { TICK_COLLECTORS } from "../../src/catalog.js";
import { TickCollectorFamilies } from "../../src/metrics/tick-collector-families.js";
import type { PlatformNode } from "../../src/platform/types.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { exporterFor, samples, scrape } from "../helpers/exporter.js";
import { linesOf, snapshot } from "./fixtures.js";

const node = (id: string, status: string, numeric: Record<string, number>): PlatformNode => ({
  id,
  status,
  numeric,
  info: {},
});

const nodes = [
  node("n1", "ready", {
    cpu_count: 8,
    allocated_cpu: 6,
    memory_total_bytes: 1_000,
    allocated_memory_bytes: 600,
    max_sandboxes: 10,
    sandbox_count: 4,
    sandbox_starting_count: 1,
  }),
  node("n2", "unhealthy", {
    cpu_count: 8,
    allocated_cpu: 2,
    memory_total_bytes: 1_000,
    allocated_memory_bytes: 200,
    max_sandboxes: 10,
    sandbox_count: 2,
    sandbox_starting_count: 0,
  }),
];

function render(over: Parameters<typeof snapshot>[0]): string {
  const { families } = new TickCollectorFamilies("sandbox", TICK_COLLECTORS).render(snapshot(over));
  return families.map((f) => f.render("prometheus")).join("");
}

describe("cluster families without an overview", () => {
  it("sums the nodes into the overview's capacity families and says so in HELP", () => {
    const text = render({ nodes });
    const cluster = text.split("\n").filter((l) => l.startsWith("sandbox_cluster_"));
    expect(cluster).toEqual([
      "sandbox_cluster_cpu_allocated 8",
      "sandbox_cluster_cpus 16",
      "sandbox_cluster_max_sandboxes 20",
      "sandbox_cluster_memory_allocated_bytes 800",
      "sandbox_cluster_memory_total_bytes 2000",
      "sandbox_cluster_nodes 2",
      "sandbox_cluster_ready_nodes 1",
      "sandbox_cluster_running_sandboxes 6",
      "sandbox_cluster_sandboxes 7",
    ]);
    const helps = text.split("\n").filter((l) => l.startsWith("# HELP sandbox_cluster_"));
    expect(helps).toHaveLength(cluster.length);
    for (const h of helps) expect(h).toContain("Derived from GET /nodes");
  });

  it("leaves out a sum no node reports (E2B nodes have no sandbox limit)", () => {
    const text = render({ nodes: [node("n1", "ready", { cpu_count: 4, sandbox_count: 3 })] });
    expect(text.split("\n").filter((l) => l.startsWith("sandbox_cluster_"))).toEqual([
      "sandbox_cluster_cpus 4",
      "sandbox_cluster_nodes 1",
      "sandbox_cluster_ready_nodes 1",
      "sandbox_cluster_running_sandboxes 3",
      "sandbox_cluster_sandboxes 3",
    ]);
  });

  it("counts the templates when there is no overview", () => {
    const t = { id: "base", status: "ready", numeric: {}, info: {} };
    const text = render({ templates: [t, { ...t, id: "py" }] });
    expect(text).toContain("sandbox_cluster_templates 2\n");
    expect(text).toContain("Derived from GET /templates");
  });

  it("uses the overview alone when there is one", () => {
    const t = { id: "base", status: "ready", numeric: {}, info: {} };
    const text = render({ overview: { numeric: { node_count: 5 } }, nodes, templates: [t] });
    expect(text.split("\n").filter((l) => l.startsWith("sandbox_cluster_"))).toEqual([
      "sandbox_cluster_nodes 5",
    ]);
    expect(text).not.toContain("Derived from GET /nodes");
  });

  it("exports nothing of the cluster when neither is readable", () => {
    expect(render({})).not.toContain("sandbox_cluster_");
  });
});

describe("an exporter against a platform without /cluster/overview", () => {
  let sim: Simulator | undefined;
  let exporter: Exporter | undefined;
  afterEach(async () => {
    await exporter?.stop();
    await sim?.close();
  });

  it("exports the cluster capacity the nodes add up to", async () => {
    sim = await startSimulator({ sandboxes: 30, nodes: 3, templates: 2 });
    sim.faults.route("GET /cluster/overview", { status: 404 });
    exporter = await exporterFor(sim);
    await exporter.runCycle();
    const text = await scrape(exporter);
    expect(linesOf(text, "sandbox_exporter_collector_supported")).toContain(
      'sandbox_exporter_collector_supported{collector="overview"} 0',
    );
    const s = samples(text);
    const sumOf = (family: string): number =>
      [...s].filter(([k]) => k.startsWith(`${family}{`)).reduce((sum, [, v]) => sum + v, 0);
    expect(s.get("sandbox_cluster_nodes")).toBe(3);
    expect(s.get("sandbox_cluster_templates")).toBe(2);
    expect(s.get("sandbox_cluster_cpus")).toBe(sumOf("sandbox_node_cpus"));
    expect(s.get("sandbox_cluster_max_sandboxes")).toBe(sumOf("sandbox_node_max_sandboxes"));
    expect(s.get("sandbox_cluster_max_sandboxes")).toBeGreaterThan(0);
    expect(s.get("sandbox_cluster_memory_allocated_bytes")).toBe(
      sumOf("sandbox_node_allocated_memory_bytes"),
    );
    expect(s.get("sandbox_cluster_running_sandboxes")).toBe(sumOf("sandbox_node_sandboxes"));
  });
});
