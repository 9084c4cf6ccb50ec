import { afterEach, describe, expect, it } from "vitest";
import type { Exporter } from "../../src/app.js";
import { dataPlaneFlags, type Simulator, startSimulator } from "../../src/simulator/index.js";
import { exporterFor, samples, scrape } from "../helpers/exporter.js";

let sim: Simulator | undefined;
let exporter: Exporter | undefined;

afterEach(async () => {
  await exporter?.stop();
  await sim?.close();
});

describe("probes wired into the exporter", () => {
  it("exports probe results on /metrics, serves /probe and reports in /status, leaving no sandbox", async () => {
    sim = await startSimulator({ sandboxes: 10 });
    const template = sim.state.templates[0]!.templateID;
    exporter = await exporterFor(sim, [
      "--probe",
      "--probe-template",
      template,
      ...dataPlaneFlags(sim.dataPort),
    ]);
    const before = sim.state.sandboxes.size;
    const result = await exporter.prober!.runOnce();
    expect(result).toBeDefined();
    const m = samples(await scrape(exporter));
    // Every probe series carries the module and the template it probes.
    const id = `module="default",template="${template}"`;
    expect(m.get(`sandbox_probe_success{${id}}`)).toBe(1);
    expect(m.get(`sandbox_probe_phase_duration_seconds{${id},phase="exec"}`)).toBeGreaterThan(0);
    expect(sim.state.sandboxes.size).toBe(before);
    const status = (await (await fetch(`${exporter.server.url}/status`)).json()) as {
      probe?: { modules: Array<{ module: string; runs: number }> };
    };
    expect(status.probe?.modules).toMatchObject([{ module: "default", runs: 1 }]);
    const onDemand = await fetch(`${exporter.server.url}/probe`);
    expect(onDemand.status).toBe(200);
    expect(await onDemand.text()).toContain(`sandbox_probe_success{${id}} 1`);
    // The on-demand answer comes before terminate ends (it must fit the scrape timeout).
    await exporter.prober?.idle();
    expect(sim.state.sandboxes.size).toBe(before);
  });
});
