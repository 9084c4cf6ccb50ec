// A real exporter with cost on, on a fake clock shared with an E2B simulator holding one running
// sandbox of 2 vCPUs and 1 GiB; its configuration is loaded again from `argv` at each reload.
import { pino } from "pino";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import type { Config } from "../../src/config/settings.js";
import { type Simulator, startSimulator } from "../../src/simulator/index.js";
import { FakeClock } from "../../src/util/clock.js";
import { samples } from "../helpers/exporter.js";

export const T0 = Date.UTC(2026, 10, 1);

export interface CostExporter {
  sim: Simulator;
  clock: FakeClock;
  exporter: Exporter;
  /** The flags the next reload loads. */
  argv: string[];
  /** Moves the shared clock on by `ms` and runs one poll cycle. */
  cycleAfter(ms: number): Promise<void>;
  /** GET /metrics in a format: its status and samples. */
  scrape(openMetrics?: boolean): Promise<{ status: number; text: string; at: Map<string, number> }>;
  /** POST /-/reload: its status and answer. */
  reload(): Promise<{ status: number; text: string }>;
  stop(): Promise<void>;
}

/** Starts the simulator and the exporter; `tweak` may change the loaded config (what no flag can). */
export async function startCostExporter(
  argv: string[],
  tweak: (c: Config) => void = () => undefined,
): Promise<CostExporter> {
  const clock = new FakeClock(T0);
  const sim = await startSimulator({ flavor: "e2b", sandboxes: 0, templates: 1, nodes: 1, clock });
  sim.state.addSandbox({ cpuCount: 2, memoryMB: 1024, startedAt: T0, endAt: T0 + 86_400_000 });
  const load = (flags: string[]): Config => {
    const { config } = loadConfig({
      argv: ["--listen", "127.0.0.1:0", "--retries", "0", "--flavor", "e2b", ...flags],
      env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: "k", SANDBOX_DOMAIN: sim.domain },
    });
    return config;
  };
  const first = load(argv);
  tweak(first);
  const c: CostExporter = {
    sim,
    clock,
    argv,
    exporter: await startExporter(first, {
      logger: pino({ level: "silent" }),
      clock,
      manual: true,
      reloadConfig: () => load(c.argv),
    }),
    async cycleAfter(ms) {
      clock.set(clock.now() + ms);
      await c.exporter.runCycle();
    },
    async scrape(openMetrics = false) {
      const res = await fetch(`${c.exporter.server.url}/metrics`, {
        headers: { accept: openMetrics ? "application/openmetrics-text" : "text/plain" },
      });
      const text = await res.text();
      return { status: res.status, text, at: samples(text) };
    },
    async reload() {
      const res = await fetch(`${c.exporter.server.url}/-/reload`, { method: "POST" });
      return { status: res.status, text: await res.text() };
    },
    async stop() {
      await c.exporter.stop();
      await sim.close();
    },
  };
  return c;
}
