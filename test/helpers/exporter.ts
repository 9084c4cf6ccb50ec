// Starts a real exporter (manual cycles) against a simulator, on loopback ephemeral ports.
import { pino } from "pino";
import { Agent } from "undici";
import { type Exporter, startExporter } from "../../src/app.js";
import { loadConfig } from "../../src/config/load.js";
import type { Simulator } from "../../src/simulator/index.js";
import { systemClock } from "../../src/util/clock.js";

export async function exporterFor(
  sim: Simulator,
  argv: string[] = [],
  key = "",
): Promise<Exporter> {
  const { config } = loadConfig({
    argv: ["--listen", "127.0.0.1:0", "--retries", "0", ...argv],
    env: { SANDBOX_API_URL: sim.apiUrl, SANDBOX_API_KEY: key, SANDBOX_DOMAIN: sim.domain },
  });
  return startExporter(config, {
    logger: pino({ level: "silent" }),
    clock: systemClock,
    dispatcher: new Agent(),
    manual: true,
  });
}

/** Parses exposition text into name{labels} -> value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

export async function scrape(e: Exporter, accept?: string): Promise<string> {
  const res = await fetch(`${e.server.url}/metrics`, accept ? { headers: { accept } } : {});
  return res.text();
}
