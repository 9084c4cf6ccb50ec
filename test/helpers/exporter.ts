// Starts a real exporter (manual cycles) against a simulator, on loopback ephemeral ports.
import { pino } from "pino";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/config/load.js";
import type { Config } from "../../src/config/schema.js";
import type { Simulator } from "../../src/simulator/index.js";
import { systemClock } from "../../src/util/clock.js";

/** Exposition text to `name{labels}` -> value (the bench's parser). */
export { samples } from "../../tools/exposition.js";

/**
 * Starts `config` silently on the system clock; cycles run when the test calls runCycle() unless
 * `scheduled`. No proxy variable reaches the loader here, so the control channel has its own
 * plain Agent, closed by stop().
 */
export function startQuiet(config: Config, scheduled = false): Promise<Exporter> {
  return startExporter(config, {
    logger: pino({ level: "silent" }),
    clock: systemClock,
    ...(scheduled ? {} : { manual: true }),
  });
}

export async function exporterFor(
  sim: Simulator,
  argv: string[] = [],
  key = "",
): Promise<Exporter> {
  const { config } = loadConfig({
    argv: ["--listen", "127.0.0.1:0", "--retries", "0", ...argv],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: key, SANDBOX_DOMAIN: sim.domain },
  });
  return startQuiet(config);
}

export async function scrape(e: Exporter, accept?: string): Promise<string> {
  const res = await fetch(`${e.server.url}/metrics`, accept ? { headers: { accept } } : {});
  return res.text();
}
