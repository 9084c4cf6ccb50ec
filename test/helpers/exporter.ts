// Starts a real exporter (manual cycles) against a simulator, on loopback ephemeral ports.
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/catalog.js";
import type { Config } from "../../src/config/settings.js";
import { dataPlaneFlags, type Simulator } from "../../src/simulator/index.js";
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

/** The example policy the demo runs (dry-run). */
export const EXAMPLE_POLICY = join(
  import.meta.dirname,
  "..",
  "..",
  "deploy",
  "policy",
  "example.yaml",
);

/**
 * An exporter set up as the demo runs it, on its own schedule: polls every second, per-sandbox
 * series, the default probe module every `probeSchedule`, the example policy in dry-run; its log
 * lines (info and up) go to `logLines`.
 */
export async function startDemoLike(
  sim: Simulator,
  probeSchedule: string,
  logLines: string[],
  extraArgv: string[] = [],
): Promise<Exporter> {
  const { config } = loadConfig({
    argv: [
      ...["--listen", "127.0.0.1:0", "--poll-schedule", "1s", "--per-sandbox-metrics"],
      ...["--probe", "--probe-schedule", probeSchedule, "--probe-template", "base"],
      ...dataPlaneFlags(sim.dataPort),
      ...["--policy", EXAMPLE_POLICY, ...extraArgv],
    ],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: "demo-key", SANDBOX_DOMAIN: sim.domain },
  });
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  return startExporter(config, { logger: pino({ level: "info" }, sink), clock: systemClock });
}
